/* outfile.h: an output file written whole or not at all. Every file that
 * ocsim and ocsim-exec write (tables, reports, plots, traces, weights,
 * topologies, checkpoint shards) goes through it.
 *
 *   struct oc_outfile o;
 *   if (oc_outfile_open(&o, "out/sweep.csv", &st) != 0) ...  // "PATH: cannot write: ..."
 *   fprintf(o.f, "tp,pp,dp\n");           // or oc_outfile_write(&o, buf, n, &st)
 *   oc_outfile_check(&o, &st);            // a streaming table: flushed now, -1 once a write failed
 *   if (oc_outfile_commit(&o, &st) != 0)  // "out/sweep.csv: cannot write: No space left on device"
 *       ...nothing under out/sweep.csv, no temporary left...
 *   (a caller that gives up: oc_outfile_abandon(&o))
 *
 * How (POSIX rename(2) replaces a name in one step): the bytes go to a
 * temporary ".NAME.<pid>.<n>.tmp" in the same folder (the same file
 * system, so the rename cannot turn into a copy; the pid and a counter keep
 * two runs, or two ranks of one process, writing into one folder apart).
 * The commit flushes, checks the stream's error flag (sticky: it sees any
 * fprintf or fwrite that failed since the open, so callers need not check
 * each one), fsyncs, closes, renames onto NAME and fsyncs the folder, so a
 * crash or a full disk leaves NAME absent (or as an earlier run left it)
 * or complete, never cut short. Any failure removes the temporary and
 * names the final file and the reason (strerror).
 *
 * "-" is stdout, and a NAME that exists and is not a regular file (a
 * device such as /dev/null or /dev/full, a pipe) is written in place:
 * nothing there can be replaced atomically, and renaming over a device
 * would replace the device. Errors are still checked and reported.
 *
 * What it is not: what goes in a file (reports/, exec/out_*.c,
 * exec/ckpt_format.c), nor a reader.
 */
#ifndef OC_OUTFILE_H
#define OC_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

#include "status.h"

#define OC_OUTFILE_PATH_MAX 4096

struct oc_outfile {
    FILE *f;                            /* write through this */
    char path[OC_OUTFILE_PATH_MAX];     /* the final name */
    char tmp[OC_OUTFILE_PATH_MAX + 64]; /* the bytes until the commit; "" when direct */
    int direct;                         /* 1: stdout or a device/pipe, written in place */
    int err;                            /* the first failure's errno, 0 none */
    const char *err_what;               /* what failed first ("write", "fsync", ...) */
    void *sink; /* the temporary's descriptor under f: it keeps the errno of
                 * a failed write(2), which stdio forgets (outfile.c) */
};

/* Opens the temporary for `path` (or path itself when direct). */
int oc_outfile_open(struct oc_outfile *o, const char *path, struct oc_status *st);
/* The same with the temporary at a name of the caller's, kept as it is
 * when the writer dies before the commit: a stream of rows a user may read
 * while it grows or after a crash (ocsim-exec's loss.csv.partial). It is
 * created or emptied; the commit renames it onto `path`, abandon removes
 * it. */
int oc_outfile_open_partial(struct oc_outfile *o, const char *path, const char *partial,
                            struct oc_status *st);
/* The descriptor the bytes go to (a signal handler may append a last line
 * to a partial file: exec/lost.h), -1 when closed. */
int oc_outfile_fd(const struct oc_outfile *o);
/* fwrite of n bytes, checked: -1 naming the file on a short write. */
int oc_outfile_write(struct oc_outfile *o, const void *data, size_t n,
                     struct oc_status *st);
/* Flushes now and reports whether every write so far succeeded: 0, or -1
 * naming the file and the reason (the file stays open; commit will fail). */
int oc_outfile_check(struct oc_outfile *o, struct oc_status *st);
/* Empties the temporary to write it again from the start (a table streamed
 * as rows finished, rewritten in rank order): the same disk space, and no
 * second temporary. -1 when a write had already failed, or direct. */
int oc_outfile_rewind(struct oc_outfile *o, struct oc_status *st);
/* fflush, error flag, fsync, fclose, rename, fsync of the folder. On failure
 * the temporary is removed and st says "PATH: cannot write: REASON". */
int oc_outfile_commit(struct oc_outfile *o, struct oc_status *st);
/* Closes and removes the temporary; the final name is left as it was. */
void oc_outfile_abandon(struct oc_outfile *o);

/* A whole file from one buffer. */
int oc_outfile_write_all(const char *path, const void *data, size_t n,
                         struct oc_status *st);
/* A file that another program wrote under `tmp` (gnuplot's images) put
 * under `path` the same way: fsync, rename, fsync of the folder; on failure
 * tmp is removed. */
int oc_outfile_publish(const char *tmp, const char *path, struct oc_status *st);
/* fsync of a folder, so that the names in it (a rename) are durable. File
 * systems that refuse it (EINVAL) count as done. */
int oc_fsync_dir(const char *dir, struct oc_status *st);

#endif
