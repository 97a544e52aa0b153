/* report_confidence.c: the confidence and memory parts of a sweep's
 * report (see report_confidence.h). */
#include "report_confidence.h"

#include <string.h>

#include "format.h"
#include "reserve.h"

static double pct(int64_t k, int64_t n)
{
    return n > 0 ? 100.0 * (double)k / (double)n : 0;
}

void oc_report_confidence_line(char *buf, size_t n, const struct oc_perturb_result *r)
{
    buf[0] = '\0';
    if (!r || r->n == 0)
        return;
    char lay[128];
    oc_layout_format(&r->layout[0], lay, sizeof lay);
    if (r->n == 1) {
        snprintf(buf, n, "confidence: %s is the only layout that fits; no rival to lose to",
                 lay);
        return;
    }
    snprintf(buf, n,
             "confidence: %s is the best in %.0f%% of %lld perturbed cost models and within "
             "%.0f%% of the best in %.0f%% (top %lld layouts, seed %llu)",
             lay, pct(r->best[0], r->draws), (long long)r->draws, 100 * OC_PERTURB_WITHIN,
             pct(r->within[0], r->draws), (long long)r->n, (unsigned long long)r->seed);
}

void oc_report_confidence_md(FILE *f, const struct oc_perturb_result *r)
{
    fputs("## Confidence of the choice\n\n", f);
    if (!r) {
        fputs("Not evaluated (`--robustness 0`).\n\n", f);
        return;
    }
    if (r->n == 0) {
        fputs("No layout fits, so there is no choice to be sure of.\n\n", f);
        return;
    }
    char line[512];
    oc_report_confidence_line(line, sizeof line, r);
    /* the line without its "confidence: " lead, as a sentence */
    const char *text = line + sizeof "confidence: " - 1;
    fprintf(f, "`%.*s`%s.\n\n", (int)(strchr(text, ' ') - text), text, strchr(text, ' '));
    if (r->n > 1)
        fprintf(f, "At its worst draw the chosen layout made %.1f%% of the best one's "
                   "tokens/s.\n\n",
                100 * r->chosen_worst_ratio);
    fprintf(f,
            "Each of the %lld draws multiplies the cost model's parts by log-normal factors "
            "(median 1): compute, pipeline bubble and the rest of the step by one compute "
            "factor (sigma %.2f), exposed TP communication by one (sigma %.2f), exposed DP "
            "and PP communication by one network factor (sigma %.2f), all shared by every "
            "layout of the draw, and each layout's step by a factor of its own (sigma %.2f). "
            "The spreads come from ocsim's validation errors (docs/guide.md, \"Confidence of "
            "the choice\"). The re-evaluation is first order, from each layout's simulated "
            "breakdown, not a new simulation (core/perturb.h).\n\n",
            (long long)r->draws, r->spread.compute, r->spread.tp, r->spread.net,
            r->spread.layout);
    fputs("| # | layout | tokens/s as simulated | best in | within 2% of the best in |\n"
          "|--:|---|--:|--:|--:|\n",
          f);
    for (int64_t i = 0; i < r->n; i++) {
        char lay[128], tps[32];
        oc_layout_format(&r->layout[i], lay, sizeof lay);
        fprintf(f, "| %lld | `%s` | %s | %.1f%% | %.1f%% |\n", (long long)(i + 1), lay,
                oc_fmt_si(tps, sizeof tps, r->tokens_per_s[i], "tok/s"),
                pct(r->best[i], r->draws), pct(r->within[i], r->draws));
    }
    fputs("\n", f);
}

void oc_report_memory_md(FILE *f, const struct oc_metrics *best, const struct oc_model *m,
                         const struct oc_topology *t)
{
    if (!t || !m)
        return;
    char p[32], r[32], d[32], mg[32];
    const double margin = best->device_mem_bytes - best->peak_mem_bytes - best->reserve_bytes;
    fprintf(f, "Memory per GPU: peak %s (stage %lld) + reserve %s of %s: margin %s",
            oc_fmt_si(p, sizeof p, best->peak_mem_bytes, "B"), (long long)best->peak_mem_stage,
            oc_fmt_si(r, sizeof r, best->reserve_bytes, "B"),
            oc_fmt_si(d, sizeof d, best->device_mem_bytes, "B"),
            oc_fmt_si(mg, sizeof mg, margin, "B"));
    if (t->reserve.mode != OC_RESERVE_AUTO) {
        fputs(" (`--reserve` fixed).\n\n", f);
        return;
    }
    struct oc_reserve rs;
    oc_reserve_layout(m, &best->layout, t, best->peak_mem_bytes, &rs);
    char a[32], b[32], c[32], e[32];
    fprintf(f, ". The reserve (`--reserve auto`, docs/guide.md \"Memory reserve\"): CUDA "
               "context %s, NCCL buffers %s (%lld communicators and the pipeline "
               "neighbours), cuBLAS workspaces %s, allocator fragmentation %s (%.0f%% of "
               "the peak).\n\n",
            oc_fmt_si(a, sizeof a, rs.cuda_context_bytes, "B"),
            oc_fmt_si(b, sizeof b, rs.nccl_bytes, "B"), (long long)rs.nccl_communicators,
            oc_fmt_si(c, sizeof c, rs.cublas_bytes, "B"),
            oc_fmt_si(e, sizeof e, rs.fragmentation_bytes, "B"), 100 * t->reserve.fragmentation);
}
