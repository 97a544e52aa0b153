/* plot_goodput.c: goodput against checkpoint interval (plot_goodput.h). */
#include "plot_goodput.h"

#include "outfile.h"
#include "paths.h"
#include "plot_write.h"

static int write_data(const char *dir, const struct oc_goodput_point *pts, int64_t n,
                      struct oc_status *st)
{
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "goodput.dat", st);
    if (!f)
        return -1;
    fprintf(f, "# goodput.dat: useful fraction of wall time against checkpoint interval\n"
               "# interval_min expected_pct sim_mean_pct sim_p5_pct sim_p95_pct\n");
    for (int64_t i = 0; i < n; i++)
        fprintf(f, "%.9g %.9g %.9g %.9g %.9g\n", pts[i].interval_s / 60, 100 * pts[i].expected,
                100 * pts[i].mean, 100 * pts[i].p5, 100 * pts[i].p95);
    return oc_gp_close(&of, st);
}

int oc_plot_goodput(const char *dir, const struct oc_goodput_point *pts, int64_t n,
                    double asked_s, double best_s, const char *title,
                    const struct oc_plot_opts *o, struct oc_status *st)
{
    OC_ASSERT(dir && pts && n > 0);
    struct oc_plot_opts po = oc_plot_opts_fill(o);
    if (oc_mkdir_p(dir, st) != 0)
        return -1;
    oc_gp_remove(dir, "goodput");
    if (write_data(dir, pts, n, st) != 0)
        return -1;
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "goodput.gp", st);
    if (!f)
        return -1;
    oc_gp_script_begin(f, "goodput", "goodput against checkpoint interval", "ocsim goodput",
                       po.width_px, po.height_px);
    if (asked_s > 0)
        fprintf(f,
                "set arrow 1 from %.9g, graph 0 to %.9g, graph 1 nohead dt 3 lw 1.5 lc rgb '%s'\n"
                "set label 1 \"asked\" at %.9g, graph 0.97 left offset 0.5,0 tc rgb '%s'\n",
                asked_s / 60, asked_s / 60, OC_GP_PP, asked_s / 60, OC_GP_PP);
    fputs("set title ", f);
    oc_gp_str(f, title ? title : "Goodput against checkpoint interval");
    fprintf(f,
            "\nset xlabel \"checkpoint interval (minutes of compute between saves)\"\n"
            "set ylabel \"useful work, %% of wall time\"\n"
            "set logscale x 10\n"
            "set grid\n"
            "set key top right\n"
            "set arrow 2 from %.9g, graph 0 to %.9g, graph 1 nohead dt 2 lw 1.5 lc rgb '%s'\n"
            "set label 2 \"best\" at %.9g, graph 0.92 left offset 0.5,0 tc rgb '%s'\n"
            "plot 'goodput.dat' using 1:4:5 with filledcurves lc rgb '%s' fs transparent "
            "solid 0.25 title 'simulated p5-p95', \\\n"
            "     '' using 1:3 with points pt 7 ps 0.9 lc rgb '%s' title 'simulated mean', \\\n"
            "     '' using 1:2 with lines lw 2 lc rgb '%s' "
            "title 'closed form (Daly 2006)'\n",
            best_s / 60,
            best_s / 60, OC_GP_FITS, best_s / 60, OC_GP_FITS, OC_GP_FWD, OC_GP_FWD, OC_GP_TP);
    oc_gp_script_end(f, "goodput", po.width_px, po.height_px);
    if (oc_gp_close(&of, st) != 0)
        return -1;
    static const char *const names[] = {"goodput"};
    return oc_plot_render(dir, &po, names, 1, st);
}
