/* test_cli_options.c: the one flag table of `ocsim` and `ocsim-exec`
 * (cli/options.h): ocsim-exec's own flags (OC_OPT_EXEC) parsed by the same
 * table as the shared ones, with their defaults, their bounds and the
 * messages ocsim-exec printed before they moved here (tests/exec_equivalence.sh
 * runs the program itself); a command without OC_OPT_EXEC refuses them as
 * before; the layout flags that wait for each other (--schedule,
 * --vchunks, --layout under --tp) resolve as before.
 */
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "test_util.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const unsigned EXEC = OC_OPT_LAYOUT | OC_OPT_OUT | OC_OPT_EXEC;

static void test_exec_defaults(void)
{
    struct oc_opts o;
    oc_opts_default(&o);
    CU_ASSERT_PTR_NULL(o.exec.backend);   /* the registry's default */
    CU_ASSERT_PTR_NULL(o.exec.precision); /* the backend's default */
    CU_ASSERT_EQUAL(o.exec.steps, 5);
    CU_ASSERT_EQUAL(o.exec.lr, 1e-3);
    CU_ASSERT_EQUAL(o.exec.seed, 1234);
    CU_ASSERT_EQUAL(o.exec.timeout_s, 0); /* auto (exec/timeout.h) */
    CU_ASSERT_EQUAL(o.exec.weights, 1);
    CU_ASSERT_EQUAL(o.exec.calibrate, 0);
    CU_ASSERT_EQUAL(o.exec.no_mpi, 0);
    CU_ASSERT_EQUAL(o.exec.netbw, 0);
    CU_ASSERT_EQUAL(o.exec.ranks_per_node, 0);      /* nodes by host name */
    CU_ASSERT_EQUAL(o.exec.max_msg_bytes, 64 << 20); /* 64 MiB */
    CU_ASSERT_EQUAL(o.cards_given, 0);
}

static void test_exec_flags(void)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    /* both spellings of a value, every flag once */
    char *argv[] = {"ocsim-exec", "--layout", "tp2-pp1-dp1", "--cards=2", "--steps", "7",
                    "--lr=2e-3", "--seed", "5000000000", "--timeout", "0.5",
                    "--backend", "cuda", "--precision=fp32", "--no-weights", "--no-mpi",
                    "--calibrate"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(argv), argv, EXEC, &st), 0);
    CU_ASSERT_EQUAL(o.cards, 2);
    CU_ASSERT_EQUAL(o.cards_given, 1);
    CU_ASSERT_EQUAL(o.layout.tp, 2);
    CU_ASSERT_EQUAL(o.exec.steps, 7);
    CU_ASSERT_EQUAL(o.exec.lr, 2e-3);
    CU_ASSERT_EQUAL(o.exec.seed, 5000000000ULL); /* no upper bound, unlike --cards */
    CU_ASSERT_EQUAL(o.exec.timeout_s, 0.5);
    CU_ASSERT_STRING_EQUAL(o.exec.backend, "cuda");
    CU_ASSERT_STRING_EQUAL(o.exec.precision, "fp32");
    CU_ASSERT_EQUAL(o.exec.weights, 0);
    CU_ASSERT_EQUAL(o.exec.no_mpi, 1);
    CU_ASSERT_EQUAL(o.exec.calibrate, 1);
}

/* One bad command line: -1 and st.msg == want. */
static void refused(unsigned groups, int argc, char **argv, const char *want)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    CU_ASSERT_EQUAL(oc_opts_parse(&o, argc, argv, groups, &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, want);
}

static void test_exec_refusals(void)
{
    char *a[] = {"x", "--cards", "1", "--layout", "tp1-pp1-dp1", "--steps", "0"};
    refused(EXEC, ARGC(a), a, "--steps must be at least 1 (got 0)");
    char *b[] = {"x", "--cards", "1", "--steps", "2x"};
    refused(EXEC, ARGC(b), b, "--steps: '2x' is not an integer");
    char *c[] = {"x", "--seed", "-1"};
    refused(EXEC, ARGC(c), c, "--seed must be at least 0 (got -1)");
    char *d[] = {"x", "--lr", "0"};
    refused(EXEC, ARGC(d), d, "--lr must be positive (got 0)");
    char *f[] = {"x", "--cards", "1", "--backend"};
    refused(EXEC, ARGC(f), f, "--backend needs a value");
    char *g[] = {"x", "--calibrate=yes"};
    refused(EXEC, ARGC(g), g, "unknown or misplaced option '--calibrate=yes' for 'x' "
                              "(see --help)");
    /* `ocsim simulate` does not take the executor's flags */
    char *h[] = {"simulate", "--cards", "8", "--layout", "tp2-pp2-dp2", "--steps", "3"};
    refused(OC_OPT_LAYOUT | OC_OPT_OUT | OC_OPT_SIM, ARGC(h), h,
            "unknown or misplaced option '--steps' for 'simulate' (see --help)");
}

/* --steps has a bound (issue 11, defect 5: 99999999999 used to be taken
 * and sized arrays that aborted the run): OC_EXEC_MAX_STEPS = 1e7 passes,
 * one more is refused with one line. */
static void test_exec_steps_bound(void)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    char *a[] = {"x", "--cards", "1", "--layout", "tp1-pp1-dp1", "--steps", "10000000"};
    CU_ASSERT_EQUAL(oc_opts_parse(&o, ARGC(a), a, EXEC, &st), 0);
    CU_ASSERT_EQUAL(o.exec.steps, 10000000);
    char *b[] = {"x", "--steps", "10000001"};
    refused(EXEC, ARGC(b), b, "--steps 10000001: at most 10000000 steps in one run "
                              "(resume from a checkpoint with --load for more)");
    char *c[] = {"x", "--steps=99999999999"};
    refused(EXEC, ARGC(c), c, "--steps 99999999999: at most 10000000 steps in one run "
                              "(resume from a checkpoint with --load for more)");
}

/* --timeout auto|SECONDS (issue 11): auto is 0 (exec/timeout.h chooses);
 * seconds in (0, a week]; each refusal names its rule (1e308 used to be
 * "not a positive number"). */
static void test_exec_timeout_flag(void)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    o.exec.timeout_s = 7; /* not the default: auto sets it */
    char *a[] = {"x", "--cards", "1", "--layout", "tp1-pp1-dp1", "--timeout=auto"};
    CU_ASSERT_EQUAL(oc_opts_parse(&o, ARGC(a), a, EXEC, &st), 0);
    CU_ASSERT_EQUAL(o.exec.timeout_s, 0);
    oc_opts_default(&o);
    char *b[] = {"x", "--cards", "1", "--layout", "tp1-pp1-dp1", "--timeout", "604800"};
    CU_ASSERT_EQUAL(oc_opts_parse(&o, ARGC(b), b, EXEC, &st), 0);
    CU_ASSERT_EQUAL(o.exec.timeout_s, 604800.0);
    const char *big = ": at most 604800 seconds (a week) per wait; 'auto' derives it "
                      "from the prediction";
    const char *const bad[][2] = {
        {"604801", "--timeout 604801"}, {"1e308", "--timeout 1e308"},
        {"inf", "--timeout inf"},       {"0", NULL},
        {"-2", NULL},                   {"nan", NULL},
        {"3s", NULL},                   {"", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char want[256];
        if (bad[i][1])
            snprintf(want, sizeof want, "%s%s", bad[i][1], big);
        else if (strcmp(bad[i][0], "0") == 0 || strcmp(bad[i][0], "-2") == 0)
            snprintf(want, sizeof want, "--timeout %s: a wait needs more than 0 seconds "
                                        "(or 'auto')", bad[i][0]);
        else
            snprintf(want, sizeof want, "--timeout: '%s' is not a number of seconds or "
                                        "'auto'", bad[i][0]);
        char *c[] = {"x", "--timeout", (char *)bad[i][0]};
        refused(EXEC, ARGC(c), c, want);
    }
}

static void test_netbw_flags(void)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    /* --netbw needs no layout; sizes take nccl-tests' binary suffixes */
    char *a[] = {"ocsim-exec", "--cards", "4", "--netbw", "--ranks-per-node", "2",
                 "--max-msg", "4M"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(a), a, EXEC, &st), 0);
    CU_ASSERT_EQUAL(o.exec.netbw, 1);
    CU_ASSERT_EQUAL(o.exec.ranks_per_node, 2);
    CU_ASSERT_EQUAL(o.exec.max_msg_bytes, 4 << 20);
    CU_ASSERT_EQUAL(o.layout_given, 0);
    const char *sizes[] = {"8", "64K", "1G", "300000"};
    const int64_t want[] = {8, 65536, 1 << 30, 300000};
    for (int i = 0; i < 4; i++) {
        oc_opts_default(&o);
        char *b[] = {"x", "--cards", "2", "--netbw", "--max-msg", (char *)sizes[i]};
        CU_ASSERT_EQUAL(oc_opts_parse(&o, ARGC(b), b, EXEC, &st), 0);
        CU_ASSERT_EQUAL(o.exec.max_msg_bytes, want[i]);
    }
    char *c[] = {"x", "--cards", "2", "--netbw", "--max-msg", "4"};
    refused(EXEC, ARGC(c), c, "--max-msg 4: the largest message must be in [8 B, 1 GiB]");
    char *d[] = {"x", "--cards", "2", "--netbw", "--max-msg", "2G"};
    refused(EXEC, ARGC(d), d, "--max-msg 2G: the largest message must be in [8 B, 1 GiB]");
    char *e[] = {"x", "--cards", "2", "--netbw", "--max-msg", "4MB"};
    refused(EXEC, ARGC(e), e, "--max-msg: '4MB' is not a size (bytes, or with K, M or G)");
    char *f[] = {"x", "--cards", "2", "--netbw", "--ranks-per-node", "0"};
    refused(EXEC, ARGC(f), f, "--ranks-per-node must be positive (got 0)");
}

/* The checkpoints' flags (exec/ckpt.h): folders as given, counts positive. */
static void test_ckpt_flags(void)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    CU_ASSERT_PTR_NULL(o.exec.save_dir);
    CU_ASSERT_PTR_NULL(o.exec.load_dir);
    CU_ASSERT_EQUAL(o.exec.save_every, 0); /* after the last step only */
    CU_ASSERT_EQUAL(o.exec.save_keep, 0);  /* keep all */
    char *a[] = {"ocsim-exec", "--cards", "1", "--layout", "tp1-pp1-dp1", "--save", "ck",
                 "--save-every=3", "--save-keep", "2", "--load=old/step-000010"};
    oc_test_expect_ok(oc_opts_parse(&o, ARGC(a), a, EXEC, &st), st.msg);
    CU_ASSERT_STRING_EQUAL(o.exec.save_dir, "ck");
    CU_ASSERT_EQUAL(o.exec.save_every, 3);
    CU_ASSERT_EQUAL(o.exec.save_keep, 2);
    CU_ASSERT_STRING_EQUAL(o.exec.load_dir, "old/step-000010");
    char *b[] = {"x", "--save", "ck", "--save-every", "0"};
    refused(EXEC, ARGC(b), b, "--save-every must be positive (got 0)");
    char *c[] = {"x", "--save-keep", "-1"};
    refused(EXEC, ARGC(c), c, "--save-keep must be positive (got -1)");
    char *d[] = {"simulate", "--cards", "8", "--load", "ck"};
    refused(OC_OPT_LAYOUT | OC_OPT_OUT | OC_OPT_SIM, ARGC(d), d,
            "unknown or misplaced option '--load' for 'simulate' (see --help)");
}

static void test_layout_flags(void)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    /* --vchunks alone makes the schedule interleaved */
    oc_opts_default(&o);
    char *a[] = {"x", "--cards", "8", "--tp", "2", "--pp", "2", "--dp", "2", "--vchunks", "2"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(a), a, OC_OPT_LAYOUT, &st), 0);
    CU_ASSERT_EQUAL(o.layout.schedule, OC_SCHED_INTERLEAVED);
    CU_ASSERT_EQUAL(o.layout.vchunks, 2);
    CU_ASSERT_EQUAL(o.layout_given, 1);
    /* --tp that says what --layout says is no conflict */
    oc_opts_default(&o);
    char *b[] = {"x", "--cards", "8", "--tp", "2", "--layout", "tp2-pp2-dp2"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(b), b, OC_OPT_LAYOUT, &st), 0);
    CU_ASSERT_EQUAL(o.layout.tp, 2);
    CU_ASSERT_EQUAL(o.layout.pp, 2);
    /* a list of schedules is a sweep's, not a layout's */
    char *c[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2", "--schedule", "1f1b,gpipe"};
    refused(OC_OPT_LAYOUT, ARGC(c), c, "--schedule takes one schedule for a single layout");
    char *d[] = {"x", "--cards", "8"};
    refused(OC_OPT_LAYOUT, ARGC(d), d,
            "a layout is required: --layout tp8-pp8-dp1 or --tp/--pp/--dp");
}

/* The run's precision: Megatron-LM's --bf16 / --fp16, and --fp32 (ocsim's
 * default is bf16); a precision part of --layout must agree with them. */
static void test_precision_flags(void)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    CU_ASSERT_EQUAL(o.layout.precision, OC_PREC_BF16);
    char *a[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2", "--fp32"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(a), a, OC_OPT_LAYOUT, &st), 0);
    CU_ASSERT_EQUAL(o.layout.precision, OC_PREC_FP32);
    oc_opts_default(&o);
    char *b[] = {"x", "--cards", "8", "--fp16"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(b), b, OC_OPT_SWEEP, &st), 0);
    CU_ASSERT_EQUAL(o.layout.precision, OC_PREC_FP16);
    oc_opts_default(&o);
    char *c[] = {"x", "--cards", "8", "--fp32", "--layout", "tp2-pp2-dp2-fp32"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(c), c, OC_OPT_LAYOUT, &st), 0);
    CU_ASSERT_EQUAL(o.layout.precision, OC_PREC_FP32);
    char *d[] = {"x", "--cards", "8", "--bf16=1"};
    refused(OC_OPT_SWEEP, ARGC(d), d,
            "unknown or misplaced option '--bf16=1' for 'x' (see --help)");
}

/* Defect 1 of issue 11: every list is bounded. 'all' adds three schedules
 * (the bound was checked once per entry, so the fourth write ran past the
 * array); a list longer than a fixed buffer was cut short silently. */
static void test_list_bounds(void)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    char *a[] = {"x", "--cards", "8", "--schedule", "all,all,all,all,all,all"};
    refused(OC_OPT_SWEEP, ARGC(a), a, "--schedule: gpipe is listed twice (by 'all')");
    /* 14 distinct entries, then 'all' brings 3 more: 17 > 16 */
    char b_list[512] = "";
    for (int v = 3; v <= 16; v++)
        snprintf(b_list + strlen(b_list), sizeof b_list - strlen(b_list), "interleaved:%d,", v);
    strcat(b_list, "all");
    char *b[] = {"x", "--cards", "8", "--schedule", b_list};
    refused(OC_OPT_SWEEP, ARGC(b), b,
            "--schedule: at most 16 schedules ('all' counts three)");
    char *c[] = {"x", "--cards", "8", "--micro-batches", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"};
    refused(OC_OPT_SWEEP, ARGC(c), c, "--micro-batches: at most 16 values");
    char *d[] = {"x", "--cards", "8", "--micro-batches", "4,2,4"};
    refused(OC_OPT_SWEEP, ARGC(d), d, "--micro-batches: 4 is listed twice");
    /* 16 entries of 22 characters: 367 bytes, past the 256-byte buffer the
     * list was copied into; every one is read, the last one whole. */
    char e_list[512] = "";
    for (int v = 1; v <= 16; v++)
        snprintf(e_list + strlen(e_list), sizeof e_list - strlen(e_list), "%sinterleaved:%d",
                 v > 1 ? "," : "", 999999980 + v);
    char *e[] = {"x", "--cards", "8", "--schedule", e_list};
    oc_opts_default(&o);
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(e), e, OC_OPT_SWEEP, &st), 0);
    CU_ASSERT_EQUAL(o.n_schedules, 16);
    CU_ASSERT_EQUAL(o.vchunks[15], 999999996);
    CU_ASSERT_EQUAL(o.schedules[15], OC_SCHED_INTERLEAVED);
}

/* Defect 8 of issue 11: a flag that says otherwise than --layout, or than
 * itself given before, was applied silently (the last one won; "--layout
 * tp8-pp8-dp1 --tp 4" then failed as a world size of 32); now both are
 * named. "--layout ...-gpipe --schedule interleaved" was reported as "v2
 * model chunks per stage need the interleaved schedule" (no v2 written). */
static void test_conflicting_flags(void)
{
    const unsigned L = OC_OPT_LAYOUT;
    char *a[] = {"x", "--cards", "8", "--layout", "tp8-pp8-dp1", "--tp", "4"};
    refused(L, ARGC(a), a, "--tp 4 and --layout tp8-pp8-dp1 disagree on tp (give one)");
    char *b[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2-gpipe", "--schedule",
                 "interleaved"};
    refused(L, ARGC(b), b, "--schedule interleaved and --layout tp2-pp2-dp2-gpipe "
                           "disagree on the schedule (give one)");
    char *c[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2-v2", "--schedule", "gpipe"};
    refused(L, ARGC(c), c, "--schedule gpipe and --layout tp2-pp2-dp2-v2 "
                           "disagree on the schedule (give one)");
    char *d[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2-v4", "--schedule",
                 "interleaved:2"};
    refused(L, ARGC(d), d, "--schedule interleaved:2 and --layout tp2-pp2-dp2-v4 "
                           "disagree on v (model chunks per stage) (give one)");
    char *e[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2-rfull", "--recompute",
                 "none"};
    refused(L, ARGC(e), e, "--recompute none and --layout tp2-pp2-dp2-rfull "
                           "disagree on recompute (give one)");
    char *f[] = {"x", "--cards", "8", "--fp32", "--layout", "tp2-pp2-dp2-bf16"};
    refused(L, ARGC(f), f, "--fp32 and --layout tp2-pp2-dp2-bf16 disagree on the "
                           "precision (give one)");
    char *g[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2", "--tp", "2",
                 "--tensor-model-parallel-size", "4"};
    refused(L, ARGC(g), g, "--tp 2 and --tensor-model-parallel-size 4 disagree (give one)");
    char *h[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2", "--cards", "16"};
    refused(L, ARGC(h), h, "--cards 8 and --cards 16 disagree (give one)");
    char *i[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2", "--sequence-parallel",
                 "--no-sequence-parallel"};
    refused(L, ARGC(i), i, "--sequence-parallel and --no-sequence-parallel disagree (give one)");
    char *j[] = {"x", "--cards", "8", "--bf16", "--fp16"};
    refused(OC_OPT_SWEEP, ARGC(j), j, "--bf16 and --fp16 disagree (give one)");
    char *k[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2", "--layout", "tp4-pp2-dp1"};
    refused(L, ARGC(k), k, "--layout tp2-pp2-dp2 and --layout tp4-pp2-dp1 disagree (give one)");
    /* the same value twice, an alias of a flag, and knobs the string does
     * not name are no conflict; --cfg is a list by repetition */
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    char *ok[] = {"x", "--cards", "8", "--cards", "8", "--layout", "tp2-pp2-dp2-mb2",
                  "--micro-batch-size", "2", "--shard-optimizer",
                  "--use-distributed-optimizer", "--recompute", "full", "--fp32"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(ok), ok, L, &st), 0);
    CU_ASSERT_EQUAL(o.layout.micro_batch, 2);
    CU_ASSERT_EQUAL(o.layout.recompute, OC_RECOMPUTE_FULL);
    CU_ASSERT_EQUAL(o.layout.precision, OC_PREC_FP32);
    oc_opts_default(&o);
    char *cfg[] = {"x", "--cards", "8", "--cfg", "a:1", "--cfg", "b:2"};
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(cfg), cfg, OC_OPT_SIM, &st), 0);
    CU_ASSERT_EQUAL(o.n_cfg, 2);
}

/* Defect 6 of issue 11: tp*pp*dp of three flags up to 1e9 each overflowed
 * int64; now refused before any product. A number past a bound is "out of
 * range" with the bound (--lr and --timeout: test_exec_refusals and
 * test_exec_timeout_flag), not "absurdly large" or "not a positive
 * number". */
static void test_bounds_said(void)
{
    char *a[] = {"x", "--cards", "8", "--tp", "1000000000", "--pp", "1000000000", "--dp",
                 "1000000000"};
    refused(OC_OPT_LAYOUT, ARGC(a), a,
            "TP*PP*DP = 1000000000*1000000000*1000000000 is more than 1000000000 cards");
    char *b[] = {"x", "--lr", "1e308"};
    refused(EXEC, ARGC(b), b, "--lr 1e308 is out of range (at most 1e9)");
    char *d[] = {"x", "--lr", "nan"};
    refused(EXEC, ARGC(d), d, "--lr: 'nan' is not a number");
    char *e[] = {"x", "--cards", "99999999999999999999"};
    refused(OC_OPT_SWEEP, ARGC(e), e,
            "--cards 99999999999999999999 is out of range (at most 1000000000)");
    char *f[] = {"x", "--cards", "2000000000"};
    refused(OC_OPT_SWEEP, ARGC(f), f, "--cards 2000000000 is out of range (at most 1000000000)");
}

/* Defect 7 of issue 11: a flag's value is echoed escaped. */
static void test_values_escaped(void)
{
    char *a[] = {"x", "--cards", "8", "--recompute", "full\n\x1b[2J"};
    refused(OC_OPT_SWEEP, ARGC(a), a,
            "--recompute: unknown mode 'full\\n\\x1b[2J' (known: none, selective, full)");
    char *b[] = {"x", "--cards", "8", "--layout", "tp2-pp2-dp2-\xff"};
    refused(OC_OPT_LAYOUT, ARGC(b), b,
            "layout 'tp2-pp2-dp2-\\xff': part '\\xff' not understood (expected "
            "tp<N>-pp<N>-dp<N>, then cp|mb|v|first|last<N>, gpipe|1f1b|interleaved, "
            "sp|nosp, rnone|rsel|rfull[<k>], zero0..3, ovl|noovl, flash|classic, "
            "coll=auto|ring|hier|tree, bf16|fp16|fp32, order=tp-dp-pp|tp-pp-dp)");
}

/* Issue 12's sweep flags: --cards lists and ranges (sorted; a range
 * doubles without a step), refused outside OC_OPT_PLAN; --reserve auto,
 * bytes and 0; --fragmentation in [0, 1); --robustness and --seed. */
static void test_plan_flags(void)
{
    const unsigned SWEEP = OC_OPT_OUT | OC_OPT_SWEEP | OC_OPT_RESERVE | OC_OPT_PLAN;
    struct oc_opts o;
    struct oc_status st = {{0}};
    char *a[] = {"x", "--cards", "64,32,48"};
    oc_opts_default(&o);
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(a), a, SWEEP, &st), 0);
    CU_ASSERT_EQUAL(o.n_cards, 3);
    CU_ASSERT(o.cards_list[0] == 32 && o.cards_list[1] == 48 && o.cards_list[2] == 64);
    CU_ASSERT_EQUAL(o.cards, 32);
    CU_ASSERT_EQUAL(o.reserve.mode, OC_RESERVE_AUTO);
    CU_ASSERT_DOUBLE_EQUAL(o.reserve.fragmentation, 0.10, 0);
    CU_ASSERT_EQUAL(o.robustness, OC_ROBUSTNESS_DEFAULT);
    char *b[] = {"x", "--cards", "32-128:32", "--reserve", "6GB", "--robustness", "0",
                 "--seed", "7"};
    oc_opts_default(&o);
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(b), b, SWEEP, &st), 0);
    CU_ASSERT(o.n_cards == 4 && o.cards_list[3] == 128 && o.cards_list[1] == 64);
    CU_ASSERT_EQUAL(o.reserve.mode, OC_RESERVE_FIXED);
    CU_ASSERT_DOUBLE_EQUAL(o.reserve.bytes, 6e9, 0);
    CU_ASSERT_EQUAL(o.robustness, 0);
    CU_ASSERT_EQUAL(o.exec.seed, 7);
    char *c[] = {"x", "--cards", "8-100", "--fragmentation", "0.25"};
    oc_opts_default(&o);
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(c), c, SWEEP, &st), 0);
    CU_ASSERT(o.n_cards == 4 && o.cards_list[0] == 8 && o.cards_list[3] == 64);
    CU_ASSERT_DOUBLE_EQUAL(o.reserve.fragmentation, 0.25, 0);
    char *d[] = {"x", "--cards", "8"};
    oc_opts_default(&o);
    CU_ASSERT_EQUAL_FATAL(oc_opts_parse(&o, ARGC(d), d, SWEEP, &st), 0);
    CU_ASSERT(o.n_cards == 1 && o.cards == 8);
    char *e[] = {"x", "--cards", "8,16"};
    refused(OC_OPT_CSV | OC_OPT_SWEEP, ARGC(e), e,
            "--cards takes one number of GPUs here (a list or a range is for `ocsim sweep`)");
    char *f[] = {"x", "--cards", "64-32"};
    refused(SWEEP, ARGC(f), f, "--cards 64-32: the range ends below its start");
    char *g[] = {"x", "--cards", "8", "--fragmentation", "1"};
    refused(SWEEP, ARGC(g), g,
            "--fragmentation: '1' is not a fraction in [0, 1) of the peak (0.10 is 10 %)");
    char *h[] = {"x", "--cards", "8", "--reserve", "6G"};
    refused(SWEEP, ARGC(h), h,
            "--reserve: '6G': unknown unit 'G' (known: B, kB, MB, GB, TB, KiB, MiB, GiB, "
            "TiB), or 'auto'");
    char *i[] = {"x", "--cards", "8", "--robustness", "5"};
    refused(OC_OPT_SWEEP, ARGC(i), i, "unknown or misplaced option '--robustness' for 'x' (see --help)");
}

static CU_TestInfo tests[] = {
    {"plan flags (issue 12)", test_plan_flags},
    {"exec defaults", test_exec_defaults},
    {"exec flags", test_exec_flags},
    {"exec refusals", test_exec_refusals},
    {"exec steps bound", test_exec_steps_bound},
    {"exec timeout flag", test_exec_timeout_flag},
    {"conflicting flags (defect 8)", test_conflicting_flags},
    {"bounds said (defect 6, 8)", test_bounds_said},
    {"values escaped (defect 7)", test_values_escaped},
    {"netbw flags", test_netbw_flags},
    {"checkpoint flags", test_ckpt_flags},
    {"layout flags", test_layout_flags},
    {"precision flags", test_precision_flags},
    {"list bounds", test_list_bounds},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"cli_options", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
