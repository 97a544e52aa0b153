/* plot_groups.c: the node groups' bar chart (see plot_groups.h). */
#include "plot_groups.h"

#include <stdio.h>

#include "plot_write.h"
#include "plots.h"

int oc_plot_groups(const char *dir, const char *title, const char *mixed, const char *one,
                   const struct oc_metrics *res, int n, const double *one_kind,
                   struct oc_status *st)
{
    oc_gp_remove(dir, "groups");
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "groups.dat", st);
    if (!f)
        return -1;
    fprintf(f, "# rank layout step_s step_one_kind_s\n");
    for (int i = 0; i < n; i++) {
        char name[128];
        oc_layout_format(&res[i].layout, name, sizeof name);
        fprintf(f, "%d ", i + 1);
        oc_gp_str(f, name);
        fprintf(f, " %.9g %.9g\n", res[i].step_time_s, one_kind[i]);
    }
    if (oc_gp_close(&of, st) != 0)
        return -1;
    f = oc_gp_open(&of, dir, "groups.gp", st);
    if (!f)
        return -1;
    oc_gp_script_begin(f, "groups", "step time on the node groups and on one kind",
                       "ocsim sweep", 1200, 700);
    fprintf(f, "set title ");
    oc_gp_str(f, title);
    fprintf(f, "\nset style data histogram\nset style histogram clustered gap 1\n"
               "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
               "set ylabel \"step time (s)\"\nset yrange [0:*]\nset grid ytics\n"
               "set xtics rotate by -30 left font \",9\"\nset key top left\n"
               "set bmargin 12\nset rmargin 14\n"
               "plot 'groups.dat' using 3:xtic(2) title ");
    oc_gp_str(f, mixed);
    fprintf(f, " lc rgb \"%s\", '' using 4 title ", OC_GP_NOFIT);
    oc_gp_str(f, one);
    fprintf(f, " lc rgb \"%s\"\n", OC_GP_FWD);
    oc_gp_script_end(f, "groups", 1200, 700);
    if (oc_gp_close(&of, st) != 0)
        return -1;
    const char *names[] = {"groups"};
    const struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    return oc_plot_render(dir, &po, names, 1, st);
}
