/* report_fixtures.h: the fixtures the tests of reports/ share
 * (test_timeline_json, test_plots, test_report_md), all filled in code:
 *
 * - the scratch folder oc_test_dir (test_util.h) under /tmp, made by
 *   suite_init and removed by oc_test_dir_remove (OCSIM_TEST_KEEP=1 keeps
 *   it, to look at the plots), and readers of the files written into it;
 * - a hand-made two-stage schedule (tp1-pp2-dp1, two micro-batches) whose
 *   times are written in report_fixtures.c op by op (rank0_hops,
 *   rank1_hops), so every ts, dur, lane and box is known by hand;
 * - five simulated layouts of 16 GPUs and three rejected ones, with
 *   metrics chosen so that ranking, breakdown and explanation are known by
 *   hand: A (1.2 M tok/s), B (1.0 M), D (0.9 M), C (0.8 M) fit; E has the
 *   most tokens/s (1.5 M) but does not fit, so it ranks last.
 *
 *   static CU_SuiteInfo suites[] = {
 *       {"plots", suite_init, oc_test_dir_remove, NULL, NULL, plot_tests}, ...};
 *   build_sweep();  oc_plot_sweep(dir, sweep, 5, rejected, 3, &po, &st);
 *
 * What it is not: a test; nothing here asserts.
 */
#ifndef OC_REPORT_FIXTURES_H
#define OC_REPORT_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "metrics.h"
#include "model.h"
#include "plots.h"
#include "schedule.h"
#include "timeline.h"
#include "topology.h"

/* Make the scratch folder oc_test_dir, /tmp/ocsim-test-reports-XXXXXX
 * (CUnit suite init; oc_test_dir_remove is the clean). */
int suite_init(void);
/* oc_test_dir/sub/name into buf. */
void path_in(char *buf, size_t n, const char *sub, const char *name);
int file_exists(const char *path);
/* Data rows (not '#', not blank) of block `index` of a gnuplot data file
 * (blocks are separated by two blank lines); index -1 counts every block. */
int count_rows(const char *path, int index);
/* The k-th data row (0-based, any block) into buf; -1 when there is none. */
int data_row(const char *path, int k, char *buf, size_t n);
/* Non-empty and starting with the PNG signature (RFC 2083, 3.1). */
int is_png(const char *path);

/* tp t, pp p, dp d, micro-batch mb, sequence 32, 1F1B, m = 2. */
struct oc_layout layout_of(int64_t t, int64_t p, int64_t d, int64_t mb);

/* The hand-made schedule and its timeline. */
struct hand {
    struct oc_schedule s;
    struct oc_timeline tl;
};
/* record: which ranks the timeline records (oc_timeline_init), NULL all. */
void build_hand(struct hand *h, const unsigned char *record);
void free_hand(struct hand *h);

/* The sweep, filled by build_sweep; indices of the five layouts. */
extern struct oc_metrics sweep[5];
extern struct oc_rejected_layout rejected[3];
enum { IA, IB, IC, ID, IE };
void build_sweep(void);
/* 8 GPUs (H100, 80 GB) per node on NVLink, one 100 Gb/s NIC per node. */
struct oc_topology topo16(void);

#endif
