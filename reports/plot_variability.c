/* plot_variability.c: ideal, mean and p50-p99 step of the layouts a sweep
 * re-ran under --variability (plot_variability.h). */
#include "plot_variability.h"

#include "outfile.h"
#include "paths.h"
#include "plot_write.h"

static int write_data(const char *dir, const struct oc_var_plot_row *rows, int64_t n,
                      struct oc_status *st)
{
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "variability.dat", st);
    if (!f)
        return -1;
    fprintf(f, "# variability.dat: step time of each layout without and with the noise\n"
               "# rank label ideal_s mean_s p50_s p99_s\n");
    for (int64_t i = 0; i < n; i++) {
        fprintf(f, "%lld ", (long long)(i + 1));
        oc_gp_str(f, rows[i].label);
        fprintf(f, " %.9g %.9g %.9g %.9g\n", rows[i].ideal_s, rows[i].mean_s, rows[i].p50_s,
                rows[i].p99_s);
    }
    return oc_gp_close(&of, st);
}

int oc_plot_variability(const char *dir, const struct oc_var_plot_row *rows, int64_t n,
                        const char *title, const struct oc_plot_opts *o,
                        struct oc_status *st)
{
    OC_ASSERT(dir && rows && n > 0);
    struct oc_plot_opts po = oc_plot_opts_fill(o);
    if (oc_mkdir_p(dir, st) != 0)
        return -1;
    oc_gp_remove(dir, "variability");
    if (write_data(dir, rows, n, st) != 0)
        return -1;
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "variability.gp", st);
    if (!f)
        return -1;
    oc_gp_script_begin(f, "variability", "step time under variability", "ocsim sweep",
                       po.width_px, po.height_px);
    fputs("set title ", f);
    oc_gp_str(f, title ? title : "Step time without and with stragglers and jitter");
    fprintf(f,
            "\nset ylabel \"step time (s)\"\n"
            "set xlabel \"layout, best mean tokens/s under the noise first\"\n"
            "set xtics rotate by -30 left noenhanced\n"
            "set xrange [0.5:%lld.5]\n"
            "set grid ytics\n"
            "set key top left\n"
            "set bmargin 9\n"
            "plot 'variability.dat' using 1:6:5:6:xtic(2) with yerrorbars pt -1 lw 2 "
            "lc rgb '%s' title 'p50 - p99 of the sampled steps', \\\n"
            "     '' using 1:4 with points pt 7 ps 1.4 lc rgb '%s' title 'mean step', \\\n"
            "     '' using 1:3 with points pt 6 ps 1.4 lw 2 lc rgb '%s' "
            "title 'ideal step (no noise)'\n",
            (long long)n, OC_GP_PP, OC_GP_PP, OC_GP_FWD);
    oc_gp_script_end(f, "variability", po.width_px, po.height_px);
    if (oc_gp_close(&of, st) != 0)
        return -1;
    static const char *const names[] = {"variability"};
    return oc_plot_render(dir, &po, names, 1, st);
}
