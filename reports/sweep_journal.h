/* sweep_journal.h: the journal of a sweep (DIR/sweep.journal), which
 * `ocsim sweep --resume` continues from: what identifies the sweep, then
 * the exact metrics of every layout simulated, appended as each finishes.
 *
 *   struct oc_sweep_id id = {0};
 *   oc_sweep_id_add(&id, "cards", "%lld", (long long)cards);
 *   oc_sweep_id_add(&id, "model", "%s %016llx", m.name,
 *                   (unsigned long long)oc_hash_model(&m));
 *   struct oc_sweep_journal j;
 *   if (resume)   // calls got(ctx, index, &mt) for every whole record
 *       n = oc_sweep_journal_resume(&j, "out/sweep.journal", &id, ncand, got, ctx, &st);
 *   else
 *       rc = oc_sweep_journal_create(&j, "out/sweep.journal", &id, &st);
 *   ...
 *   oc_sweep_journal_append(&j, index, &mt, &st);   // as each layout finishes
 *   oc_sweep_journal_close(&j);
 *
 * Why a journal beside sweep.csv: the CSV holds the figures at %.9g and no
 * per-stage rows, while report.md, the plots and the ranking's ties use
 * every field bit for bit; a resumed sweep must end byte-identical to one
 * that ran through. The records are the struct's bytes (the header's
 * `format` line pins the build's sizes), so the journal is a file of the
 * machine and build that wrote it, not an exchange format.
 *
 * The file: text lines "KEY VALUE" (the first "ocsim sweep journal 1", a
 * "format" line this module writes, then the caller's identity lines),
 * "end", then binary records, each a header (magic, stage count, the
 * layout's index, an FNV-1a hash of the rest) and the metrics without the
 * unused stage rows. A record cut short (a sweep killed by SIGKILL, a full
 * disk) or damaged ends the journal: resume keeps the whole records before
 * it, cuts the file there and says how many bytes it dropped.
 *
 * What it is not: the sweep (sim/sweep.h) or sweep.csv (metrics_csv.h).
 * Identity values are one line each: control characters become '?'.
 */
#ifndef OC_SWEEP_JOURNAL_H
#define OC_SWEEP_JOURNAL_H

#include <stdint.h>
#include <stdio.h>

#include "layout.h"
#include "metrics.h"
#include "model.h"
#include "status.h"
#include "topology.h"

#define OC_SWEEP_ID_MAX 16

/* What identifies a sweep: KEY VALUE lines, compared one by one. */
struct oc_sweep_id {
    int n;
    char key[OC_SWEEP_ID_MAX][24];
    char value[OC_SWEEP_ID_MAX][256];
};
void oc_sweep_id_add(struct oc_sweep_id *id, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* FNV-1a 64 (Fowler, Noll, Vo) over every field that shapes a simulation,
 * field by field (no padding bytes). A field added to these structs must be
 * added here, or a resume would not see it change. */
uint64_t oc_hash_model(const struct oc_model *m);
uint64_t oc_hash_topology(const struct oc_topology *t);
/* Layouts with their indices (the sweep's candidates to simulate, keyed
 * by their index in the enumeration, which the records carry): every
 * knob, so that a record cannot land on another layout. */
uint64_t oc_hash_layouts(const struct oc_layout *l, const int64_t *index, int64_t n);
/* A file's bytes. Returns 0, or -1 with st->msg. */
int oc_hash_file(const char *path, uint64_t *hash, struct oc_status *st);

struct oc_sweep_journal {
    FILE *f;             /* NULL: closed */
    char path[4096];
};

/* Creates (truncates) the journal and writes the identity. 0 or -1. */
int oc_sweep_journal_create(struct oc_sweep_journal *j, const char *path,
                            const struct oc_sweep_id *id, struct oc_status *st);

typedef void (*oc_sweep_journal_fn)(void *ctx, int64_t index, const struct oc_metrics *mt);

/* Opens an existing journal to continue it: refuses (-1, one line naming
 * the key and both values) a journal of another sweep or another build,
 * calls fn for every whole record (indices < n_index; the first record of
 * an index wins), cuts a damaged tail and leaves the journal open for
 * appending. Returns the records read; *dropped_bytes says what was cut. */
int64_t oc_sweep_journal_resume(struct oc_sweep_journal *j, const char *path,
                                const struct oc_sweep_id *id, int64_t n_index,
                                oc_sweep_journal_fn fn, void *ctx, int64_t *dropped_bytes,
                                struct oc_status *st);

/* One record, flushed. 0 or -1 with st->msg. */
int oc_sweep_journal_append(struct oc_sweep_journal *j, int64_t index,
                            const struct oc_metrics *mt, struct oc_status *st);

/* One result as a journal record (header, then the metrics without the
 * unused stage rows): what append writes and resume reads, and what the
 * ranks of an MPI sweep send each other (sim/sweep_mpi.h). The bytes are
 * this build's (oc_sweep_record_format names their sizes).
 *   unsigned char *b = oc_xmalloc(oc_sweep_record_size(&mt));
 *   oc_sweep_record_encode(b, index, &mt);
 *   size_t used = oc_sweep_record_decode(b, len, n_index, &index, &mt); */
size_t oc_sweep_record_size(const struct oc_metrics *mt);
void oc_sweep_record_encode(unsigned char *buf, int64_t index, const struct oc_metrics *mt);
/* The record at data (len bytes there) into *index and *mt: returns its
 * size, or 0 when it is cut short, damaged or its index is not < n_index. */
size_t oc_sweep_record_decode(const unsigned char *data, size_t len, int64_t n_index,
                              int64_t *index, struct oc_metrics *mt);
/* The journal's "format F+S" line: the record sizes of this build. */
void oc_sweep_record_format(char *buf, size_t n);

/* fsync and close; 0, or -1 with st->msg when the data may not be on disk. */
int oc_sweep_journal_close(struct oc_sweep_journal *j, struct oc_status *st);

#endif
