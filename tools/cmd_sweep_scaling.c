/* cmd_sweep_scaling.c: `ocsim sweep --cards LIST` (see sweep_scaling.h):
 * one complete sweep per card count, smallest first, each into
 * DIR/cards-<N>/ exactly as `ocsim sweep --cards N --out DIR/cards-<N>`
 * writes it, then the scaling table and plot of the chosen layouts
 * (reports/scaling.h) in DIR.
 *
 * A count that ends without a chosen layout (nothing fits, or every
 * simulation failed) keeps its row, empty, and the command exits 1; a
 * sweep stopped by SIGINT or SIGTERM ends the loop: the table holds the
 * counts done and the command exits 130 (--resume continues every count,
 * those finished from their journals). Bad input or a file that cannot be
 * written: 2. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "paths.h"
#include "scaling.h"
#include "sweep_scaling.h"
#include "sweep_stop.h"

/* The command as typed (for scaling.csv and scaling.md), without --resume. */
static char *command_text(int argc, char **argv)
{
    size_t n = 16;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 1;
    char *s = oc_xmalloc(n);
    strcpy(s, "ocsim");
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--resume") != 0)
            strcat(strcat(s, " "), argv[i]);
    return s;
}

/* The closing table on stdout. */
static void print_scaling(const struct oc_scaling_row *rows, int n, const char *dir)
{
    printf("\nscaling (%s/scaling.md):\n%6s  %-34s %12s %12s %6s %6s %s\n", dir, "cards",
           "chosen layout", "tokens/s", "per card", "MFU", "eff.", "best in");
    for (int i = 0; i < n; i++) {
        const struct oc_scaling_row *r = &rows[i];
        if (!r->have_best) {
            printf("%6lld  none\n", (long long)r->cards);
            continue;
        }
        char lay[128], a[32], b[32], c[16] = "-";
        oc_layout_format(&r->best.layout, lay, sizeof lay);
        if (r->have_confidence)
            snprintf(c, sizeof c, "%.0f%%", 100 * r->conf_best);
        printf("%6lld  %-34s %12s %12s %5.1f%% %5.1f%% %s\n", (long long)r->cards, lay,
               oc_fmt_si(a, sizeof a, r->best.tokens_per_s, "tok/s"),
               oc_fmt_si(b, sizeof b, r->tokens_per_s_per_gpu, "tok/s"), 100 * r->best.mfu,
               100 * r->efficiency, c);
    }
}

static void row_from(struct oc_scaling_row *row, int64_t cards, int rc,
                     const struct oc_sweep_outcome *oc)
{
    memset(row, 0, sizeof *row);
    row->cards = cards;
    row->rc = rc;
    row->have_best = oc->have_best;
    if (oc->have_best)
        row->best = oc->best;
    row->have_confidence = oc->have_confidence && oc->confidence.draws > 0;
    if (row->have_confidence) {
        const double d = (double)oc->confidence.draws;
        row->conf_best = (double)oc->confidence.best[0] / d;
        row->conf_within = (double)oc->confidence.within[0] / d;
    }
}

int oc_sweep_scaling(struct oc_opts *o, const struct oc_replay_opts *ro, int argc,
                     char **argv)
{
    const char *dir = o->out_dir ? o->out_dir : "out/sweep";
    struct oc_status st = {{0}};
    if (oc_mkdir_p(dir, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    struct oc_scaling_row *rows = oc_xcalloc((size_t)o->n_cards, sizeof *rows);
    struct oc_sweep_outcome *oc = oc_xmalloc(sizeof *oc);
    int n = 0, worst = 0, rc = 0;
    for (int i = 0; i < o->n_cards; i++) {
        const int64_t cards = o->cards_list[i];
        o->cards = cards;
        /* setup checked the smallest count; a platform file may lack the
         * hosts of a larger one */
        if (i > 0 && oc_replay_check_forked(&o->topo, cards, ro, &st) != 0) {
            fprintf(stderr, "ocsim sweep: --cards %lld: the simulation settings (--cfg, "
                            "--platform) fail in SimGrid: %s\n",
                    (long long)cards, st.msg);
            rc = 2;
            break;
        }
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/cards-%lld", dir, (long long)cards);
        printf("%s== %lld cards: %s ==\n", i ? "\n" : "", (long long)cards, sub);
        fflush(stdout);
        const int one = oc_sweep_one(o, ro, argc, argv, sub, oc);
        fflush(stdout);
        if (one == 2) {
            rc = 2;
            break;
        }
        row_from(&rows[n++], cards, one, oc);
        if (one == 130) {
            worst = 130;
            break;
        }
        if (one != 0 || !oc->have_best)
            worst = worst ? worst : 1;
        oc_sweep_stop_release();
    }
    free(oc);
    if (rc == 0 && n > 0) {
        oc_scaling_fill(rows, n);
        char *cmd = command_text(argc, argv);
        const struct oc_scaling_ctx ctx = {.command_line = cmd, .model = o->model.name,
                                           .gpu = o->topo.device.name};
        const int wrc = oc_scaling_write(dir, rows, n, &ctx, &st);
        free(cmd);
        if (wrc < 0) {
            fprintf(stderr, "ocsim sweep: %s\n", st.msg);
            rc = 2;
        } else {
            if (wrc > 0)
                fprintf(stderr, "ocsim sweep: warning: %s\n", st.msg);
            print_scaling(rows, n, dir);
        }
    }
    free(rows);
    return rc ? rc : worst;
}
