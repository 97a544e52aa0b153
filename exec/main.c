/* main.c: `ocsim-exec`, the executor program: every rank of a layout runs
 * its op list of the schedule for real (runner.h) on a backend (backend.h,
 * chosen from the registry: backends.h), and rank 0 writes what was
 * measured in the simulator's schemas.
 *
 *   mpirun -np 8 ocsim-exec --backend cpu --model tiny --layout tp2-pp2-dp2 \
 *          --global-batch 8 --seq 32 --steps 5 --out DIR
 *   mpirun -np 16 ocsim-exec --backend cuda ...      # one process per GPU
 *   ocsim-exec --backend cuda --layout tp4-pp2-dp1 ...  # one node, no MPI:
 *                                                       # one thread per GPU
 *
 * Launch (launch.h, ctl.h): under mpirun or srun (Open MPI's, PMI's or
 * Slurm's environment), and always for a backend whose registry entry says
 * mpi_always (cpu) in an MPI build, one MPI process per rank; otherwise one
 * process whose threads are the ranks of one node (threads_are_ranks:
 * cuda; else one rank).
 *
 * Takes the model, topology and layout options of `ocsim simulate` plus
 * its own (cli/options.h, OC_OPT_EXEC): --backend, --precision, --steps,
 * --lr, --seed, --timeout, --calibrate, --no-weights, --no-mpi, and the
 * checkpoints' --save, --save-every, --save-keep, --load (ckpt.h). Writes into
 * DIR, each file as soon as it is complete (so a run that fails later keeps
 * them), whole or not at all (core/outfile.h: a full disk leaves no file cut
 * short, and one line names the file):
 *   loss.csv      step,loss: the global batch's mean token loss, per step
 *                 (streamed as loss.csv.partial, renamed when complete)
 *   measured.csv, ops.csv, memory.csv, timeline.json   (out_measured.h)
 *   weights.bin   the whole model's fp32 weights after the last step, in the
 *                 arena order of a one-rank run (see weights.txt;
 *                 out_weights.h)
 *
 * With --calibrate it only measures the machine (the backend's calibration:
 * cpu/calibrate_cpu.h, cuda/calibrate_cuda.h) and writes
 * DIR/topology-calibrated.json. With --netbw it only measures the network
 * between the nodes its ranks run on (netbw.h: one rank per node, or
 * --ranks-per-node K on one machine; the layout is not used; without MPI
 * the cuda backend runs --cards threads) and writes DIR/topology-netbw.json.
 *
 * The communication timeout (the deadline of one wait) is --timeout
 * SECONDS or, by default, auto: 10 x the predicted step, at least 60 s
 * (timeout.h); rank 0 prints it first, "timeout: 60 s per wait (auto: ...)".
 *
 * Exit codes: 0 done; 2 bad input (one line on stderr from rank 0, before
 * any work); 1 a failure during the run; 3 a rank timed out (its message
 * names the rank and the op it was waiting in, and the ranks of its node
 * that are stopped; the job is ended: MPI_Abort, or the process's exit,
 * the NCCL communicators aborted); 4 a rank was lost (its process died:
 * killed, crashed): the survivors' code, with one line from the first of
 * its node to see it, naming it and the op it was in (lost.h); under
 * mpirun the job's code is the launcher's, Open MPI's 128 + the signal
 * that killed the rank (137 for SIGKILL); 130 interrupted (SIGINT,
 * SIGTERM). One line of ocsim-exec's own in each case. loss.csv is
 * streamed as loss.csv.partial and renamed when the last step is done; a
 * run that ends early leaves it under that name, with its last line "#
 * partial: K of N steps completed; <the line above>" (when rank 0 itself
 * died: the rows without that line), and none of the other files, which
 * are written after the last step (a training run first removes the files
 * of an earlier run from DIR, so none is taken for its own).
 *
 * Test hooks (not in --help): OCSIM_EXEC_TEST_HANG_RANK=R makes rank R
 * sleep forever before its first op, OCSIM_EXEC_TEST_DIE_RANK=R makes it
 * die (SIGKILL) there; OCSIM_EXEC_TEST_DIE_SAVE_RANK=R with
 * OCSIM_EXEC_TEST_DIE_SAVE_STEP=K makes it die halfway through writing its
 * shard of the checkpoint after step K; OCSIM_EXEC_TEST_GRADS=1 makes
 * weights.bin hold the last step's reduced gradients (test_grads below).
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends.h"
#include "ckpt.h"
#include "compress.h"
#include "csv_table.h"
#include "ctl.h"
#include "format.h"
#include "gpt.h"
#include "job.h"
#include "launch.h"
#include "lost.h"
#include "mbsplit.h"
#include "options.h"
#include "out_measured.h"
#include "out_weights.h"
#include "paths.h"
#include "runner.h"

#define GROUPS (OC_OPT_LAYOUT | OC_OPT_OUT | OC_OPT_EXEC)

static void help(void)
{
    puts("usage: mpirun -np N ocsim-exec --layout tp2-pp2-dp2 [--model M] [--topology T]\n"
         "                  [--global-batch B] [--seq S] [--steps K] [--out DIR]\n"
         "                  [--backend cpu|cuda] [--precision bf16|fp32] [--lr X]\n"
         "                  [--seed S] [--timeout auto|SECONDS]\n"
         "       ocsim-exec --backend cuda --layout tp2-pp2-dp1 ...   (one node, no MPI)\n\n"
         "Runs the layout for real: every rank executes its op list of the schedule\n"
         "(a GPT-2 or Llama decoder with Megatron tensor parallelism, the pipeline\n"
         "schedule through point-to-point messages, DP gradient reduction, AdamW):\n"
         "one MPI process per rank under mpirun or srun (N must equal tp*pp*dp), or,\n"
         "for the cuda backend without mpirun, one thread per GPU of this node.\n"
         "Writes DIR/loss.csv, DIR/measured.csv (the columns of simulate.csv),\n"
         "DIR/ops.csv, DIR/memory.csv, DIR/timeline.json and DIR/weights.bin\n"
         "(default DIR: out/exec).\n");
    oc_opts_print_exec_help(stdout);
    puts("Defaults that differ from `ocsim simulate`: --cards is the number of ranks,\n"
         "--model tiny, --global-batch 8. The executor runs GPT-2 blocks and Llama\n"
         "blocks (RMSNorm, RoPE with rope_scaling none, linear or llama3, SwiGLU,\n"
         "grouped-query attention with TP dividing the KV heads), with sequence\n"
         "parallelism (sp, the default, or nosp) and flash (the default) or classic\n"
         "attention, as the layout says.\n"
         "Checkpoints: --save DIR writes one shard per rank (fp32 weights and Adam\n"
         "moments) and a manifest with their SHA-256s; --load DIR checks them all and\n"
         "resumes, in the same layout or another (resharded). A save took 1 to 3 s per\n"
         "GB of shards (12 bytes per parameter held) on the machine of\n"
         "docs/benchmarks.md, a load 0.6 to 1.4 s/GB from the page cache, ~8 s/GB cold;\n"
         "tools/bench-checkpoint.sh measures yours (docs/guide.md, \"Checkpoints\").");
    oc_opts_print_help(stdout, GROUPS);
}

/* A library message without its "exec: " module prefix. */
static const char *msg_of(const struct oc_status *st)
{
    return strncmp(st->msg, "exec: ", 6) == 0 ? st->msg + 6 : st->msg;
}

static int env_rank(const char *name)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : -1;
}

/* Ends the job from a rank: one line (from the first rank of the node to
 * end it: lost.h), loss.csv marked partial where this rank holds it, then
 * every rank goes (exit code). A timeout names the node's ranks that are
 * stopped (SIGSTOP), whom the others wait for. */
static void die(struct oc_ctl *c, int code, const char *how, const struct oc_status *st)
{
    char line[OC_MSG_MAX + 512], stopped[512] = "";
    if (c->timed_out)
        oc_lost_stopped(stopped, sizeof stopped);
    snprintf(line, sizeof line, "rank %d%s%s%s", c->rank, how, msg_of(st), stopped);
    if (oc_lost_end(c->slot, line))
        fprintf(stderr, "ocsim-exec: %s\n", line);
    fflush(stderr);
    oc_ctl_abort(c, code);
}

/* ------------------------------------------------------------------ */
/* One rank                                                             */

/* The first lines of a run (rank 0): what runs, and the timeout chosen. */
static void print_start(const struct oc_exec_job *j, int world, int64_t first_step)
{
    char prec[64] = "", from[48] = "";
    if (j->backend->precision_choice)
        snprintf(prec, sizeof prec, " (%s GEMMs)", j->bjob.precision);
    if (first_step > 0)
        snprintf(from, sizeof from, " from step %lld", (long long)first_step + 1);
    printf("ocsim-exec: %s, %s on %d %s%s, %lld micro-batches of %lld x %lld "
           "tokens, %lld steps%s\n",
           j->o.model.name, j->lname, world, j->backend->device_words, prec,
           (long long)j->sched.num_micro_batches, (long long)j->o.layout.micro_batch,
           (long long)j->o.layout.seq_length, (long long)j->o.exec.steps, from);
    char why[512];
    oc_timeout_describe(&j->timeout, why, sizeof why);
    printf("timeout: %s\n", why);
    fflush(stdout);
}

/* The crash-mid-save test hook (ckpt.h): OCSIM_EXEC_TEST_DIE_SAVE_RANK and
 * OCSIM_EXEC_TEST_DIE_SAVE_STEP. */
static struct oc_ckpt_hook save_hook(void)
{
    const char *s = getenv("OCSIM_EXEC_TEST_DIE_SAVE_STEP");
    return (struct oc_ckpt_hook){env_rank("OCSIM_EXEC_TEST_DIE_SAVE_RANK"),
                                 s && *s ? atoll(s) : -1};
}

/* The files a training run writes, removed before its first step: a run
 * that ends early leaves none of an earlier run's to be taken for its
 * own (only loss.csv.partial, marked: lost.h). */
static void remove_stale(const char *out)
{
    static const char *const names[] = {"loss.csv", "loss.csv.partial", "measured.csv",
                                        "ops.csv", "memory.csv", "timeline.json",
                                        "weights.bin", "weights.txt"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", out, names[i]);
        (void)remove(path); /* ENOENT: nothing to remove */
    }
}

/* loss.csv, complete: from its partial name (loss.csv.partial, whose rows
 * were flushed one by one) to its own, synced first (csv_table.h). */
static void close_loss(struct oc_ctl *c, struct oc_csv *loss)
{
    struct oc_status st = {{0}};
    oc_lost_stream_done();
    if (oc_csv_close(loss, &st) != 0)
        die(c, 1, ": ", &st);
}

/* The training steps (from the checkpoint's step with --load, numbered
 * globally in loss.csv), each followed by a checkpoint where one is due;
 * rank 0 writes loss.csv and prints a line per step. */
static void train(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_runner *r,
                  struct oc_out_steps *a)
{
    const int rank = c->rank, world = c->size;
    struct oc_status st = {{0}};
    char path[4200], tmp[4220];
    struct oc_csv loss;
    static const char *const loss_cols[] = {"step", "loss"};
    snprintf(path, sizeof path, "%s/loss.csv", j->out);
    snprintf(tmp, sizeof tmp, "%s.partial", path);
    if (rank == 0) {
        remove_stale(j->out);
        if (oc_csv_open_partial(&loss, path, tmp, loss_cols, 2, &st) != 0)
            die(c, 1, ": ", &st);
        oc_lost_stream(oc_outfile_fd(&loss.out), j->o.exec.steps); /* an early end marks it */
        print_start(j, world, r->o.first_step);
    }
    const struct oc_ckpt_hook hook = save_hook();
    const int64_t first = r->o.first_step, end = first + j->o.exec.steps;
    const double tokens = (double)j->o.layout.global_batch * (double)j->o.layout.seq_length;
    double *step_info = rank == 0 ? oc_xmalloc((size_t)world * 2 * sizeof(double)) : NULL;
    for (int64_t k = first; k < end; k++) {
        if (oc_runner_step(r, k, &st) != 0)
            die(c, c->timed_out ? 3 : 1, c->timed_out ? " " : " failed ", &st);
        double mine[2] = {r->loss_sum, r->step_end_s};
        oc_ctl_set_what(c, "gathering the loss of step %lld", (long long)k + 1);
        if (oc_ctl_gather(c, mine, step_info, (int64_t)sizeof mine, 0, &st) != 0 ||
            oc_out_steps_add(c, a, r, &st) != 0)
            die(c, 3, " ", &st);
        if (rank == 0) {
            double sum = 0, t = 0;
            for (int q = 0; q < world; q++) { /* rank order: deterministic */
                sum += step_info[2 * q];
                if (step_info[2 * q + 1] > t)
                    t = step_info[2 * q + 1];
            }
            oc_csv_field_i64(&loss, k + 1);
            oc_csv_field_f64(&loss, sum / tokens);
            if (oc_csv_end_row(&loss) != 0) {
                /* A full disk ends the run now, not after the last step; the
                 * close removes the partial file and names loss.csv. */
                oc_lost_stream_done();
                oc_csv_close(&loss, &st);
                die(c, 1, ": ", &st);
            }
            oc_lost_stream_row();
            char bs[32];
            printf("step %4lld  loss %.6f  %s\n", (long long)k + 1, sum / tokens,
                   oc_fmt_si(bs, sizeof bs, t, "s"));
            fflush(stdout);
        }
        if (oc_ckpt_due(&j->o.exec, k + 1, k + 1 == end) &&
            oc_ckpt_save(c, j, r, k + 1, &hook, &st) != 0)
            die(c, c->timed_out ? 3 : 1, " failed ", &st);
    }
    free(step_info);
    if (rank == 0)
        close_loss(c, &loss);
}

/* The test hook OCSIM_EXEC_TEST_GRADS=1: weights.bin (and the replica
 * checks) get the last step's gradients as AdamW took them, after the DP
 * all-reduce, the tied embedding's all-reduce and the TP sum of the
 * norms' gradients under sequence parallelism, in place of the weights.
 * Why: AdamW divides each gradient by its own running RMS, so the weights
 * hide a gradient's scale (a gradient left summed over DP instead of
 * averaged moves them almost as the right one does); tests/exec_grads.sh
 * holds this file against the one-process run's. Not under ZeRO-1 with DP
 * > 1, where a rank holds the reduced gradient of its own slices only.
 * Returns a host copy (free it), or NULL when the hook is not set. */
static float *test_grads(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_runner *r,
                         struct oc_backend *b)
{
    const char *s = getenv("OCSIM_EXEC_TEST_GRADS");
    if (!s || strcmp(s, "1") != 0)
        return NULL;
    if (j->o.layout.zero && j->o.layout.dp > 1) {
        struct oc_status st = {{0}};
        oc_fail(&st, "OCSIM_EXEC_TEST_GRADS: not under ZeRO-1 with DP %lld (a rank holds "
                     "the reduced gradient of its own slices only)",
                (long long)j->o.layout.dp);
        die(c, 2, ": ", &st);
    }
    float *g = oc_xmalloc((size_t)r->p.n * sizeof *g);
    b->ops->download(b, g, r->p.g, r->p.n * (int64_t)sizeof *g);
    return g;
}

/* After the last step: the measured files, the replica checks, weights.bin. */
static void write_outputs(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_runner *r,
                          struct oc_out_steps *a, struct oc_backend *b)
{
    struct oc_status st = {{0}};
    if (oc_out_measured(c, j, a, r, b->ops->mem_peak_bytes(b), &st) != 0)
        die(c, c->timed_out ? 3 : 1, ": ", &st);
    int64_t dp_differ = 0, rep_differ = 0;
    double rep_maxdiff = 0;
    float *grads = test_grads(c, j, r, b);
    const float *w = grads ? grads : oc_runner_weights(r);
    if (oc_out_dp_replicas(c, &j->o.layout, r, w, &dp_differ, &st) != 0 ||
        (j->o.exec.weights &&
         oc_out_weights(c, j, r, w, &rep_differ, &rep_maxdiff, &st) != 0))
        die(c, c->timed_out ? 3 : 1, ": ", &st);
    free(grads);
    if (c->rank != 0)
        return;
    /* Replicas that drift apart would mean a non-deterministic reduction or
     * a runner bug; the run itself is complete. */
    if (dp_differ > 0)
        fprintf(stderr, "ocsim-exec: warning: %lld ranks hold weights that differ from "
                        "their DP replica on DP rank 0\n", (long long)dp_differ);
    if (rep_differ > 0)
        fprintf(stderr, "ocsim-exec: warning: %lld weights differ between copies that "
                        "should be equal (TP replicas, tied embedding), by up to %g\n",
                (long long)rep_differ, rep_maxdiff);
    if (dp_differ == 0 && rep_differ == 0)
        printf("replicas: every DP replica%s holds bitwise the same weights\n",
               j->o.exec.weights ? ", TP replica of a replicated tensor and tied embedding copy"
                                 : "");
    printf("wrote %s/loss.csv, measured.csv, ops.csv, memory.csv, timeline.json%s\n",
           j->out, j->o.exec.weights ? ", weights.bin" : "");
    fflush(stdout);
}

/* --calibrate: the backend's measurement of this machine at the layout's
 * shapes, written as DIR/topology-calibrated.json (a copy of --topology
 * with the measured fields replaced); no training. */
static int calibrate(struct oc_ctl *c, const struct oc_exec_job *j)
{
    struct oc_status st = {{0}};
    char path[4200];
    snprintf(path, sizeof path, "%s/topology-calibrated.json", j->out);
    int rc = j->backend->calibrate(c, &j->bjob, path, &st);
    if (rc != 0 && c->rank == 0)
        fprintf(stderr, "ocsim-exec: %s\n", msg_of(&st));
    return rc != 0 ? 1 : 0;
}

/* --netbw: the backend's measurement of the network between the nodes of
 * this job (netbw.h), written as DIR/topology-netbw.json (a copy of the
 * --topology file with the NIC figures measured); no training. */
static int netbw(struct oc_ctl *c, const struct oc_exec_job *j)
{
    struct oc_status st = {{0}};
    char path[4200], base[4096];
    snprintf(path, sizeof path, "%s/topology-netbw.json", j->out);
    struct oc_net_map map;
    /* Bad input (the topology's file, one node): exit 2, from rank 0. */
    if (oc_data_path("topologies", j->o.topology_name, base, sizeof base, &st) != 0 ||
        oc_net_map_init(&map, c, j->o.exec.ranks_per_node, &st) != 0) {
        if (c->rank == 0)
            fprintf(stderr, "ocsim-exec: %s\n", msg_of(&st));
        return 2;
    }
    const struct oc_netbw_opts no = {
        .base = &j->o.topo,
        .base_path = base,
        .out_path = path,
        .ranks_per_node = j->o.exec.ranks_per_node,
        .max_msg_bytes = j->o.exec.max_msg_bytes,
        .backend = j->backend->name,
        .log = c->rank == 0 ? stdout : NULL,
    };
    int rc = j->backend->netbw(c, &no, &map, NULL, &st);
    oc_net_map_free(&map);
    if (rc != 0 && c->rank == 0)
        fprintf(stderr, "ocsim-exec: %s\n", msg_of(&st));
    return rc != 0 ? 1 : 0;
}

/* A rank's whole run: backend, runner, the steps, the outputs. Returns the
 * exit code (failures during the run end the job through die()). */
static int rank_main(struct oc_ctl *c, void *arg)
{
    const struct oc_exec_job *j = arg;
    if (j->o.exec.calibrate)
        return calibrate(c, j);
    if (j->o.exec.netbw)
        return netbw(c, j);
    struct oc_status st = {{0}};
    struct oc_backend b;
    if (j->backend->init(&b, c, &j->bjob, &st) != 0)
        die(c, 1, ": ", &st);
    struct oc_runner_opts ro = OC_RUNNER_OPTS_DEFAULT;
    ro.steps = j->o.exec.steps;
    ro.seed = j->o.exec.seed;
    ro.adamw.lr = (float)j->o.exec.lr;
    ro.test_hang = env_rank("OCSIM_EXEC_TEST_HANG_RANK") == c->rank;
    ro.test_die = env_rank("OCSIM_EXEC_TEST_DIE_RANK") == c->rank;
    struct oc_runner r;
    if (oc_runner_init(&r, &j->o.model, &j->sched, &b, &ro, &st) != 0)
        die(c, 1, ": ", &st);
    /* --load: verified on every rank before the first step; a refusal is
     * one line from rank 0 and exit 2 on every rank */
    const int lrc = j->o.exec.load_dir ? oc_ckpt_load(c, j, &r, &st) : 0;
    if (lrc == 2) {
        if (c->rank == 0)
            fprintf(stderr, "ocsim-exec: %s\n", msg_of(&st));
        oc_runner_free(&r);
        b.ops->free_backend(&b);
        return 2;
    }
    if (lrc != 0)
        die(c, c->timed_out ? 3 : 1, " failed to load a checkpoint: ", &st);
    struct oc_out_steps a;
    oc_out_steps_init(&a, &j->sched, j->o.exec.steps, c->rank);
    train(c, j, &r, &a);
    write_outputs(c, j, &r, &a, &b);
    oc_out_steps_free(&a);
    oc_runner_free(&r);
    b.ops->free_backend(&b);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The job                                                              */

/* The backend's own checks, in the order of their messages: known, this
 * build has it, this machine can run it; then the precision. */
static int check_backend(struct oc_exec_job *j, const char *name, struct oc_status *st)
{
    const struct oc_backend_entry *e = j->backend;
    if (!e) {
        char known[128];
        oc_backend_names(known, sizeof known);
        return oc_fail(st, "--backend: unknown backend '%s' (known: %s)", name, known);
    }
    const char *prec = j->o.exec.precision ? j->o.exec.precision : e->precision_default;
    if (strcmp(prec, "bf16") != 0 && strcmp(prec, "fp32") != 0)
        return oc_fail(st, "--precision: unknown precision '%s' (known: bf16, fp32)", prec);
    /* The layout's precision says what the run keeps and sends (layout.h);
     * ocsim-exec's default is the backends' (main), a layout asking for
     * another is refused rather than mispredicted. */
    if (j->o.layout.precision != e->run_precision)
        return oc_fail(st, "layout precision %s: the %s backend keeps activations and "
                           "gradients in %s (drop '%s' from the layout and flags; "
                           "--precision sets the cuda GEMM operands)",
                       oc_precision_name(j->o.layout.precision), e->name,
                       oc_precision_name(e->run_precision),
                       oc_precision_name(j->o.layout.precision));
    if (!e->built)
        return oc_fail(st, "--backend %s is not built in this ocsim-exec (%s were missing "
                           "when it was configured)", e->name, e->needs);
    if (e->available && !e->available())
        return oc_fail(st, "--backend %s: %s", e->name, e->unavailable);
    j->bjob.precision = prec;
    return 0;
}

/* --netbw: the backend and the topology file; the layout is not used (the
 * ranks are the job's, whatever it started). */
static int check_netbw(struct oc_exec_job *j, const char *name, int world,
                       struct oc_status *st)
{
    struct oc_opts *o = &j->o;
    if (o->exec.calibrate)
        return oc_fail(st, "--netbw and --calibrate measure different things: run them "
                           "one after the other (--netbw --topology "
                           "DIR/topology-calibrated.json)");
    if (o->cards_given && o->cards != world)
        return oc_fail(st, "--cards %lld does not match the %d ranks", (long long)o->cards,
                       world);
    if (world > 4096) /* without MPI: threads of this process */
        return oc_fail(st, "--netbw: %d ranks in one process is absurd", world);
    if (check_backend(j, name, st) != 0 || oc_opts_load(o, st) != 0)
        return -1;
    if (!j->backend->netbw)
        return oc_fail(st, "--netbw: the %s backend has no network measurement", name);
    return 0;
}

/* Gradient compression (core/compress.h): top-k, q8 and q1 run on a
 * backend whose runner has the compression kernels (runner_gc.c); local
 * SGD and PowerSGD are predicted, not run; the error-feedback residuals
 * are not in the checkpoints. */
static int check_gc(const struct oc_exec_job *j, struct oc_status *st)
{
    const struct oc_opts *o = &j->o;
    const struct oc_layout *l = &o->layout;
    if (!oc_gc_on(l))
        return 0;
    char g[48];
    oc_gc_label(l, g, sizeof g);
    if (l->sync_every > 1)
        return oc_fail(st, "layout %s: ocsim-exec does not run local SGD (sync%lld) yet "
                           "(ocsim simulate predicts it; gc=topk<D>, gc=q8 and gc=q1 run)",
                       j->lname, (long long)l->sync_every);
    if (l->gc == OC_GC_POWERSGD)
        return oc_fail(st, "layout %s: ocsim-exec does not run PowerSGD (%s) yet (ocsim "
                           "simulate predicts it; gc=topk<D>, gc=q8 and gc=q1 run)",
                       j->lname, g);
    if (!j->backend->runs_gc)
        return oc_fail(st, "layout %s: the %s backend does not run gradient compression "
                           "(%s); --backend cpu does", j->lname, j->backend->name, g);
    if (o->exec.save_dir || o->exec.load_dir)
        return oc_fail(st, "layout %s: --save and --load with %s: the checkpoints do not "
                           "hold the error-feedback residuals", j->lname, g);
    return 0;
}

/* Everything checked before any work (one line and exit 2 on failure), and
 * the schedule built: ranks against the layout, the backend, the model and
 * topology files, the layout, what the executor and the backend run. */
static int check_job(struct oc_exec_job *j, const char *name, const struct oc_launch *L,
                     int world, const struct oc_backend_entry *launch, struct oc_status *st)
{
    struct oc_opts *o = &j->o;
    if (o->exec.netbw)
        return check_netbw(j, name, world, st);
    /* The model's attention (exec/model) runs whole sequences: no ring of
     * K/V blocks between CP ranks (core/schedule_cp.h). */
    if (o->layout.cp > 1)
        return oc_fail(st, "layout %s: context parallelism (cp%lld) is not run by "
                           "ocsim-exec (no ring attention in the executor); "
                           "ocsim simulate predicts it", j->lname, (long long)o->layout.cp);
    /* core/mbsplit.h: the runner runs one count on every replica (and its
     * loss is each replica's mean, not the step's) */
    if (oc_mbs_on(&o->layout) || (o->mbsplit && strcmp(o->mbsplit, "even") != 0))
        return oc_fail(st, "layout %s: ocsim-exec does not run unequal micro-batch counts "
                           "per DP replica (mbs=, --dp-micro-batch-split) (ocsim simulate "
                           "predicts it; the loss would need normalising by the step's tokens)",
                       j->lname);
    const int64_t need = oc_layout_world(&o->layout);
    if (L->mpi && need != world)
        return oc_fail(st, "layout %s needs tp*pp*dp = %lld processes, but MPI started %d "
                           "(use mpirun -np %lld)", j->lname, (long long)need, world,
                       (long long)need);
    if (!L->mpi && need != world)
        return oc_fail(st, "layout %s needs tp*pp*dp = %lld ranks; without MPI the %s "
                           "backend runs one (use mpirun -np %lld)", j->lname,
                       (long long)need, launch->name, (long long)need);
    if (o->cards_given && o->cards != world)
        return oc_fail(st, "--cards %lld does not match the %d ranks", (long long)o->cards,
                       world);
    if (check_backend(j, name, st) != 0 || oc_opts_load(o, st) != 0 ||
        oc_layout_validate(&o->layout, &o->model, &o->topo, o->cards, st) != 0)
        return -1;
    if (o->exec.calibrate)
        return (o->exec.save_dir || o->exec.load_dir)
                   ? oc_fail(st, "--calibrate trains nothing: drop --save and --load")
                   : 0;
    /* Training: modelled by ocsim (core/schedule_zero.h, memory.h) but not run here:
     * refused rather than run as something else (--calibrate, above, runs
     * the parts at the layout's shapes, whatever its sharding). */
    if (o->layout.zero >= 2)
        return oc_fail(st, "layout %s: ocsim-exec does not run ZeRO-%d yet (ocsim simulate "
                           "predicts it; zero1 runs)", j->lname, o->layout.zero);
    if (o->layout.uneven_chunks) /* core/placement.h: the runner's chunks are equal */
        return oc_fail(st, "layout %s: ocsim-exec does not run unevenv (chunks of different "
                           "layers) yet (ocsim simulate predicts it)",
                       j->lname);
    if (o->layout.overlap_param_gather) /* core/schedule_pgather.h */
        return oc_fail(st, "layout %s: ocsim-exec does not run pgovl (--overlap-param-gather: "
                           "the weight all-gather under the next forward) yet (ocsim simulate "
                           "predicts it; without it the gather runs after the optimizer)",
                       j->lname);
    if (o->layout.recompute_layers > 0)
        return oc_fail(st, "layout %s: ocsim-exec does not run rfull%lld (full recompute of "
                           "the first layers of each chunk) yet (ocsim simulate predicts it; "
                           "rfull runs)", j->lname, (long long)o->layout.recompute_layers);
    if (check_gc(j, st) != 0)
        return -1;
    if (!o->exec.save_dir && (o->exec.save_every > 0 || o->exec.save_keep > 0))
        return oc_fail(st, "--save-every and --save-keep need --save DIR");
    struct oc_schedule_opts so = {OC_GRAIN_LAYER, 1, NULL};
    if (oc_gpt_check_layout(&o->model, &o->layout, st) != 0 ||
        oc_schedule_build(&j->sched, &o->model, &o->layout, &so, st) != 0)
        return -1;
    if (j->backend->check_schedule && j->backend->check_schedule(&j->sched, st) != 0)
        return -1;
    return 0;
}

/* The deadline of one wait (timeout.h; print_start says it): from
 * the prediction of a training run's step (--timeout auto), or as given. */
static void plan_timeout(struct oc_exec_job *j, int rank)
{
    const struct oc_opts *o = &j->o;
    const int train = !o->exec.calibrate && !o->exec.netbw;
    oc_timeout_plan(&j->timeout, o->exec.timeout_s, OC_EXEC_MAX_TIMEOUT_S,
                    train ? &o->model : NULL, &o->layout, &o->topo, o->exec.save_dir != NULL,
                    o->exec.load_dir != NULL);
    j->bjob.timeout_s = j->timeout.timeout_s;
    (void)rank; /* said by print_start, once the job's checks have passed (a
                 * refused job prints nothing on stdout) */
}

/* MPI: this process is one rank; rank 0 makes the output folder first and
 * every rank learns the verdict. */
static int run_mpi(const struct oc_launch *L, struct oc_exec_job *j)
{
    struct oc_status st = {{0}};
    struct oc_ctl ctl;
    if (oc_launch_ctl(L, &ctl, j->timeout.timeout_s, &st) != 0) {
        fprintf(stderr, "ocsim-exec: rank %d: %s\n", L->rank, msg_of(&st));
        oc_launch_abort(L, 1);
    }
    int dir_ok = 1;
    if (L->rank == 0 && oc_mkdir_p(j->out, &st) != 0) {
        fprintf(stderr, "ocsim-exec: %s\n", st.msg);
        dir_ok = 0;
    }
    oc_ctl_set_what(&ctl, "the start");
    if (oc_ctl_bcast(&ctl, &dir_ok, (int64_t)sizeof dir_ok, 0, &st) != 0)
        die(&ctl, 3, " ", &st);
    int rc = dir_ok ? rank_main(&ctl, j) : 2;
    oc_ctl_free(&ctl);
    return rc;
}

/* One process: its threads are the ranks (or it runs one). */
static int run_local(struct oc_exec_job *j, int world)
{
    struct oc_status st = {{0}};
    if (oc_mkdir_p(j->out, &st) != 0) {
        fprintf(stderr, "ocsim-exec: %s\n", st.msg);
        return 2;
    }
    return oc_ctl_local_run(world, j->timeout.timeout_s, rank_main, j);
}

int main(int argc, char **argv)
{
    static struct oc_exec_job job;
    struct oc_exec_job *j = &job;
    struct oc_opts *o = &j->o;
    oc_opts_default(o);
    o->model_name = "tiny";
    o->layout.global_batch = 8;
    o->layout.precision = OC_PREC_FP32; /* both backends' (backends.h) */
    o->cards = 1; /* --cards defaults to the number of ranks, known below */
    /* Parsed before MPI starts (the backend and --no-mpi decide whether it
     * does); a bad flag is reported once MPI says which rank is 0. */
    struct oc_status st = {{0}};
    const int parsed = oc_opts_parse(o, argc, argv, GROUPS, &st);
    const char *name = o->exec.backend ? o->exec.backend : oc_backend_default()->name;
    j->backend = oc_backend_find(name);
    /* an unknown backend launches as the default, to say so from rank 0 */
    const struct oc_backend_entry *launch = j->backend ? j->backend : oc_backend_default();
    struct oc_launch L;
    oc_launch_start(&L, &argc, &argv, o->exec.no_mpi, launch->mpi_always);
    /* One BLAS thread: deterministic sums (gpt.h) and one core per rank. */
    openblas_set_num_threads(1);
    /* A lost rank named, loss.csv marked partial on SIGTERM / SIGINT */
    oc_lost_handlers_install();
    if (parsed != 0 || o->help) {
        if (L.rank == 0 && parsed != 0)
            fprintf(stderr, "ocsim-exec: %s\n", st.msg);
        else if (L.rank == 0)
            help();
        return oc_launch_finish(&L, parsed != 0 ? 2 : 0);
    }
    int world = L.world;
    const int64_t need = oc_layout_world(&o->layout);
    if (L.mpi && !o->cards_given)
        o->cards = world;
    if (!L.mpi) {
        /* --netbw has no layout: --cards threads (one per GPU) */
        const int64_t threads = o->exec.netbw && o->cards_given ? o->cards : need;
        world = launch->threads_are_ranks ? (int)threads : 1;
        if (!o->cards_given)
            o->cards = need;
    }
    oc_layout_format(&o->layout, j->lname, sizeof j->lname);
    j->out = o->out_dir ? o->out_dir : "out/exec";
    j->bjob = (struct oc_backend_job){&o->model, &o->layout, &o->topo, NULL,
                                      o->exec.timeout_s};
    memset(&j->sched, 0, sizeof j->sched);
    int rc = check_job(j, name, &L, world, launch, &st);
    if (rc != 0 && L.rank == 0)
        fprintf(stderr, "ocsim-exec: %s\n", msg_of(&st));
    if (rc == 0)
        plan_timeout(j, L.rank);
    if (rc == 0)
        rc = L.mpi ? run_mpi(&L, j) : run_local(j, world);
    else
        rc = 2;
    oc_schedule_free(&j->sched);
    return oc_launch_finish(&L, rc);
}
