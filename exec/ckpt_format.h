/* ckpt_format.h: what a checkpoint of ocsim-exec is on disk: its names,
 * its manifest (JSON), a shard's header (JSON inside the binary shard),
 * the model's fingerprint, and the copy of a tensor's pieces between two
 * layouts (resharding). Pure functions of their arguments (no MPI, no
 * backend), so the CUnit suite test_exec_ckpt pins them with values by
 * hand; the collective save and load over a run are ckpt.h's.
 *
 *   DIR/latest                      "step-000010\n": the newest complete one
 *   DIR/step-000010/manifest.json   written last, by rank 0
 *   DIR/step-000010/shard-tp1-pp0-dp1-c0-r00003.bin   one per world rank
 *
 *   struct oc_ckpt_manifest mf;            // filled by the saver, then
 *   char *text = oc_ckpt_manifest_json(&mf);          // manifest.json
 *   oc_ckpt_manifest_parse(&back, text, "manifest.json", &st);
 *   struct oc_ckpt_header h;               // a shard's header
 *   size_t n; unsigned char *head = oc_ckpt_header_encode(&h, &n);
 *   oc_ckpt_header_decode(&back_h, head, n, "shard-...bin", &st);
 *
 * A shard file (little-endian, fp32):
 *
 *   bytes [0, 8)      "OCSIMSHD" (OC_CKPT_SHARD_MAGIC)
 *   bytes [8, 16)     H: the header's length in bytes, unsigned 64-bit
 *   bytes [16, 16+H)  the header: JSON, padded with spaces so that the
 *                     data starts at a multiple of 64 bytes (safetensors'
 *                     layout: a length, a JSON table, raw tensors)
 *   then              w: the rank's weights arena (nw floats, params.h's
 *                     arena order), m: AdamW's first moments (nopt
 *                     floats: the whole arena, or under ZeRO-1 this DP
 *                     rank's slice of every tensor, back to back), v: the
 *                     second moments (nopt floats), nothing after.
 *
 * The header names the shard's place (world rank, tp, pp, dp, its model
 * chunks), the step, the model's fingerprint, and every tensor: its global
 * name (kind and layer), global shape, the block of it the rank holds
 * (params.h: rows from row0 in each of `parts` row blocks, columns from
 * col0), where its weights start in w, and the flat range [opt_lo, opt_hi)
 * of the block whose moments start at opt_off in m and v. That is all a
 * loader under another layout needs to find every element
 * (oc_ckpt_piece_copy).
 *
 * What it is not: file I/O, hashing or the collective save and load
 * (ckpt_io.h, ckpt.h).
 */
#ifndef OC_EXEC_CKPT_FORMAT_H
#define OC_EXEC_CKPT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "params.h"
#include "status.h"

#define OC_CKPT_FORMAT "ocsim-checkpoint"
#define OC_CKPT_SHARD_FORMAT "ocsim-shard"
#define OC_CKPT_VERSION 1
#define OC_CKPT_SHARD_MAGIC "OCSIMSHD"  /* 8 bytes, no NUL in the file */
#define OC_CKPT_ALIGN 64                /* the data's alignment in a shard */
#define OC_CKPT_MAX_CHUNKS 64           /* model chunks on one stage */
#define OC_CKPT_NAME_MAX 128
#define OC_CKPT_SHA_HEX 65              /* 64 hex digits and a NUL */
#define OC_CKPT_MANIFEST "manifest.json"
#define OC_CKPT_LATEST "latest"

/* Where a shard sits in the layout that wrote it. */
struct oc_ckpt_coord {
    int64_t rank;                        /* world rank */
    int64_t tp, pp, dp;
    int64_t nchunks;                     /* model chunks of the stage */
    int64_t chunks[OC_CKPT_MAX_CHUNKS];  /* global chunk numbers,
                                            chunk*pp + stage (placement.h) */
};

/* The shard's file name: "shard-tp1-pp0-dp1-c0.2-r00003.bin" (chunks
 * joined by '.'). */
void oc_ckpt_shard_name(const struct oc_ckpt_coord *c, char *buf, size_t n);
/* The step's folder name: "step-000010" (steps done when it was saved). */
void oc_ckpt_step_name(int64_t step, char *buf, size_t n);
/* 1 when two coordinates are the same place. */
int oc_ckpt_coord_equal(const struct oc_ckpt_coord *a, const struct oc_ckpt_coord *b);
/* "rank 3 (tp1 pp0 dp1 chunks 0.2)" */
void oc_ckpt_coord_words(const struct oc_ckpt_coord *c, char *buf, size_t n);

/* ------------------------------------------------------------------ */
/* The model's fingerprint                                              */

/* SHA-256 (hex) of the model's canonical text: every field of struct
 * oc_model the executor's math reads (not its name or model_type), as
 * "key=value\n" lines with %.17g for reals, so that a checkpoint refuses a
 * model whose tensors or numbers differ even under the same name. */
void oc_ckpt_model_sha256(const struct oc_model *m, char hex[OC_CKPT_SHA_HEX]);

/* ------------------------------------------------------------------ */
/* The manifest                                                         */

struct oc_ckpt_shard {
    char file[OC_CKPT_NAME_MAX];
    struct oc_ckpt_coord at;
    int64_t bytes;                 /* the file's size */
    char sha256[OC_CKPT_SHA_HEX];  /* of the whole file, hex */
};

struct oc_ckpt_manifest {
    int64_t step;                  /* steps done */
    char model_name[128];
    char model_sha256[OC_CKPT_SHA_HEX];
    /* the layout that wrote it (its string names every knob) */
    char layout[128];
    int64_t tp, pp, dp, vchunks, micro_batch;
    int shard_optimizer;           /* ZeRO-1: m, v sliced over DP */
    int sequence_parallel, overlap_grad_reduce;
    char schedule[16], recompute[16], order[16]; /* layout.h's names */
    /* precision: of the run (layout.h: activations, gradients, messages),
     * of the GEMM operands (the cuda backend's --precision; the run's
     * where the backend has no choice); weights and moments are fp32 */
    char precision_run[8], precision_gemm[8];
    char backend[16];
    /* data position (data.h): the step's samples are [next_step * G,
     * (next_step + 1) * G) of the stream keyed by data_seed */
    uint64_t seed;                 /* --seed: weights' key; data's is seed + 1 */
    int64_t global_batch, seq_length;
    /* AdamW (params.h): its step counter is `step`; the hyper-parameters
     * are recorded, not enforced (--lr may change on a resume) */
    double lr, beta1, beta2, eps, weight_decay;
    int64_t nshards;
    struct oc_ckpt_shard *shards;  /* (nshards) in world-rank order */
};

/* The manifest as JSON text (indented; free it). */
char *oc_ckpt_manifest_json(const struct oc_ckpt_manifest *mf);
/* Parses text (`where` names it in messages: "DIR/manifest.json"): every
 * field present with its type, the format and version known. 0, or -1
 * with one line naming the field. Free with oc_ckpt_manifest_free. */
int oc_ckpt_manifest_parse(struct oc_ckpt_manifest *mf, const char *text,
                           const char *where, struct oc_status *st);
void oc_ckpt_manifest_free(struct oc_ckpt_manifest *mf);

/* ------------------------------------------------------------------ */
/* A shard's header                                                     */

struct oc_ckpt_tensor {
    char name[16];                 /* oc_param_name: "qkvw" */
    int64_t layer;                 /* global layer; -1: embedding, head */
    int64_t grows, gcols;          /* global shape */
    int64_t row0, col0, rows, cols, parts; /* the block held (params.h) */
    int64_t offset;                /* first float of its weights in w */
    int64_t opt_lo, opt_hi;        /* its block's flat floats with moments */
    int64_t opt_off;               /* where they start in m and in v */
};

struct oc_ckpt_header {
    int64_t step;
    char model_sha256[OC_CKPT_SHA_HEX];
    struct oc_ckpt_coord at;
    int64_t nw, nopt;              /* floats of w; of m and of v */
    int64_t nt;
    struct oc_ckpt_tensor *t;      /* (nt) arena order */
};

/* The header of a rank's shard from its parameters (p: the tensor table,
 * opt_off and the ZeRO-1 slice; its arenas are not read). Free with
 * oc_ckpt_header_free. */
void oc_ckpt_header_of(struct oc_ckpt_header *h, const struct oc_params *p,
                       const struct oc_ckpt_coord *at, int64_t step,
                       const char model_sha256[OC_CKPT_SHA_HEX]);
/* The file's first bytes up to the data: magic, length, padded JSON
 * (*n is a multiple of OC_CKPT_ALIGN). Free it. */
unsigned char *oc_ckpt_header_encode(const struct oc_ckpt_header *h, size_t *n);
/* The header's length from the first 16 bytes of a file (magic checked):
 * 0, or -1 with "where: not a shard (...)". */
int oc_ckpt_header_length(const unsigned char first[16], const char *where,
                          uint64_t *len, struct oc_status *st);
/* Parses the first n bytes of a file (the 16 bytes and the JSON). The
 * tensors must lie inside w, m and v; their blocks inside their global
 * shape. 0, or -1 with one line naming `where` and the field. */
int oc_ckpt_header_decode(struct oc_ckpt_header *h, const unsigned char *buf,
                          size_t n, const char *where, struct oc_status *st);
void oc_ckpt_header_free(struct oc_ckpt_header *h);
/* Bytes of the shard file h describes: the encoded header, w, m and v. */
int64_t oc_ckpt_header_file_bytes(const struct oc_ckpt_header *h);

/* ------------------------------------------------------------------ */
/* Pieces: resharding                                                   */

/* A flat range [lo, hi) of the floats of one tensor's block (row-major in
 * the block, as the arena holds it), buf[0] being float lo. */
struct oc_ckpt_piece {
    struct oc_param_tensor t;      /* the block: rows, cols, row0, col0,
                                      parts, grows, gcols */
    int64_t lo, hi;
    float *buf;
};

/* The block of a header's tensor as params.h describes it. */
struct oc_param_tensor oc_ckpt_tensor_block(const struct oc_ckpt_tensor *t);

/* The local row of global row g in block t, or -1 where t does not hold
 * it (oc_params_global_row's inverse). */
int64_t oc_ckpt_local_row(const struct oc_param_tensor *t, int64_t g);

/* Copies every element that src holds and dst wants, each to its global
 * position's place in dst (same global shape, asserted); dst->buf NULL:
 * counts only. Returns the floats copied. Two pieces of one layout's
 * shards never overlap, so a loader sums the counts to see that dst is
 * covered. */
int64_t oc_ckpt_piece_copy(const struct oc_ckpt_piece *src, struct oc_ckpt_piece *dst);

#endif
