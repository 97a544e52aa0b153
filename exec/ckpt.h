/* ckpt.h: ocsim-exec's checkpoints, saved and loaded by every rank
 * together over the control plane (ctl.h): --save DIR [--save-every N]
 * [--save-keep K] and --load DIR.
 *
 *   // after runner init, before the first step (main.c):
 *   int rc = oc_ckpt_load(&ctl, &job, &runner, &st);  // 2: refused, one line
 *   ... runner.o.first_step is the checkpoint's step ...
 *   // after each step k (global; done = k + 1 steps):
 *   if (oc_ckpt_due(&job.o.exec, done, last))
 *       oc_ckpt_save(&ctl, &job, &runner, done, &hook, &st);
 *
 * On disk (ckpt_format.h has the files' contents):
 *
 *   DIR/step-000010/             one complete checkpoint: a manifest.json
 *     manifest.json              and one shard per world rank; a folder
 *     shard-tp0-pp0-dp0-c0-r00000.bin   of this name is complete
 *     ...
 *   DIR/step-000010.partial/     a save under way (or one that crashed)
 *   DIR/latest                   "step-000010": the newest complete one
 *
 * Saving (collective, between two steps): rank 0 makes a fresh
 * DIR/step-N.partial/; every rank writes its shard there atomically
 * (ckpt_io.h: temporary name, checked writes, fflush + fsync, rename,
 * fsync of the folder) hashing the bytes as it writes them; rank 0
 * gathers every shard's size and SHA-256 (the gather is the barrier that
 * every shard is durably renamed), writes manifest.json the same way,
 * renames the folder to DIR/step-N (an older step-N, from a run that went
 * back, is moved aside and removed after), fsyncs DIR, rewrites
 * DIR/latest atomically and, with --save-keep K, removes all but the
 * newest K step folders. A crash at any point leaves DIR/latest naming
 * the previous complete checkpoint (the only window: between moving an
 * older step-N aside and renaming the new one, when latest named that
 * older step-N, a crash leaves latest naming a missing folder; --load
 * says so).
 *
 * Loading (collective, before the first step): rank 0 finds the manifest
 * (DIR/manifest.json, else DIR/latest's folder), checks it against the
 * run (model name and config fingerprint, precision, the data's global
 * batch and sequence length) and the folder's listing against it (a
 * listed shard missing, a shard file not listed); the ranks then check
 * the shards, rank i the shards i, i + world, ...: each header's place
 * against its name and manifest entry (reordered), its step and model,
 * the size (truncated) and the SHA-256 of the whole file (corrupted).
 * Every rank learns the first problem in shard order; if there is one,
 * rank 0 prints it and every rank returns 2. Then each rank reads, from
 * whichever shards hold them, the weights and AdamW moments of its own
 * tensors by global position (oc_ckpt_piece_copy: the same layout reads
 * its own shard; another layout is resharded), checks that every element
 * was found, uploads them to the backend and sets first_step (and the
 * data's seed, if --seed differs): the next step draws the data and
 * AdamW's counter where the saved run stopped, so
 * a resume is bitwise the run that did not stop (same layout), and another
 * layout differs only in the sums' order.
 *
 * What it is not: the file formats (ckpt_format.h), hashing and atomic
 * files (ckpt_io.h), the runner (it only gets first_step).
 */
#ifndef OC_EXEC_CKPT_H
#define OC_EXEC_CKPT_H

#include <stdint.h>

#include "ckpt_format.h"
#include "ctl.h"
#include "job.h"
#include "runner.h"
#include "status.h"

/* A test hook (not in --help; main.c reads OCSIM_EXEC_TEST_DIE_SAVE_RANK
 * and OCSIM_EXEC_TEST_DIE_SAVE_STEP): rank `rank` dies (SIGKILL) halfway
 * through writing its shard of the save after step `step`. */
struct oc_ckpt_hook {
    int64_t die_rank, die_step;   /* -1: never */
};

/* Is a save due after `done` steps (global) when the run's last step is
 * `last` (1) or not: --save given, and done a multiple of --save-every, or
 * the last step. */
int oc_ckpt_due(const struct oc_exec_flags *x, int64_t done, int last);

/* Collective: the checkpoint of `done` steps into x->save_dir (see the
 * header comment); rank 0 prints one line with its size and time. 0, or
 * -1 with st->msg on every rank (the job should end: exit 1). */
int oc_ckpt_save(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_runner *r,
                 int64_t done, const struct oc_ckpt_hook *hook, struct oc_status *st);

/* Collective: resumes from j->o.exec.load_dir (see the header comment).
 * 0: loaded, r->o.first_step set; 2: refused, st->msg the one line (the
 * same on every rank); 1: a failure of the machine (I/O, a timeout), with
 * st->msg. */
int oc_ckpt_load(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_runner *r,
                 struct oc_status *st);

/* ckpt_save.c, shared with ckpt_load.c: the run's manifest fields (all but
 * the shards) and this rank's place. */
void oc_ckpt_run_manifest(const struct oc_exec_job *j, const struct oc_runner *r,
                          int64_t step, struct oc_ckpt_manifest *mf);
void oc_ckpt_rank_coord(const struct oc_runner *r, struct oc_ckpt_coord *at);

#endif
