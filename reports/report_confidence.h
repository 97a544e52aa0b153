/* report_confidence.h: the parts of a sweep's report about how much to
 * trust the choice: the confidence under perturbed cost models
 * (core/perturb.h) and the chosen layout's memory against the device with
 * its reserve (core/reserve.h). report_md.c puts them in report.md;
 * tools/cmd_sweep.c prints the one-line forms.
 *
 *   char line[256];
 *   oc_report_confidence_line(line, sizeof line, &result);
 *   // "confidence: tp8-pp4-dp2-mb1-1f1b is the best in 71% of 200 perturbed
 *   //  cost models and within 2% of the best in 93% (seed 1234)"
 *   oc_report_confidence_md(f, &result);          // "## Confidence of the choice"
 *   oc_report_memory_md(f, &best, &model, &topo); // one paragraph
 */
#ifndef OC_REPORT_CONFIDENCE_H
#define OC_REPORT_CONFIDENCE_H

#include <stddef.h>
#include <stdio.h>

#include "metrics.h"
#include "model.h"
#include "perturb.h"
#include "topology.h"

/* One line (no newline); empty when r has no layout. */
void oc_report_confidence_line(char *buf, size_t n, const struct oc_perturb_result *r);
/* The section: the sentence, the spreads, the table of the layouts
 * re-evaluated and what the re-evaluation is. r NULL: the section says
 * it was not evaluated. */
void oc_report_confidence_md(FILE *f, const struct oc_perturb_result *r);
/* Memory of the chosen layout: peak, reserve (its terms when auto),
 * device, margin. m or t NULL: left out. */
void oc_report_memory_md(FILE *f, const struct oc_metrics *best, const struct oc_model *m,
                         const struct oc_topology *t);

#endif
