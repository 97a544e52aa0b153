/* ckpt_io.h: the file side of checkpoints: SHA-256 (OpenSSL's libcrypto,
 * FIPS 180-4; never a hand-written hash), files written atomically, and
 * the few folder operations a save and a load need.
 *
 *   struct oc_ckpt_file f;
 *   if (oc_ckpt_file_open(&f, "DIR/step-000010.partial", "shard-...bin", &st) ...
 *   oc_ckpt_file_write(&f, head, n, &st);       // every write checked, hashed
 *   oc_ckpt_file_write(&f, w, nw * 4, &st);
 *   oc_ckpt_file_commit(&f, &st);   // fflush, fsync, close, rename, fsync dir
 *   ... f.bytes, f.sha256 ...
 *   (on any failure: oc_ckpt_file_abandon(&f): closed, temporary removed)
 *
 * Atomic writing is core/outfile.h's (every output file of ocsim goes
 * through it): the bytes go to a temporary in the same folder, are flushed
 * and fsync'ed, then renamed to NAME, and the folder is fsync'ed so that
 * the rename is durable. A crash leaves NAME absent or complete, never
 * partial. A shard adds its SHA-256, hashed as the bytes are written.
 *
 * What it is not: what goes in the files (ckpt_format.h) or when they are
 * written (ckpt.h).
 */
#ifndef OC_EXEC_CKPT_IO_H
#define OC_EXEC_CKPT_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ckpt_format.h"
#include "outfile.h"
#include "status.h"

/* An incremental SHA-256 (an EVP_MD_CTX behind ctx). */
struct oc_sha256 {
    void *ctx;
};
void oc_sha256_init(struct oc_sha256 *h);
void oc_sha256_update(struct oc_sha256 *h, const void *data, size_t n);
/* Writes the digest as 64 lower-case hex digits and frees the context. */
void oc_sha256_final(struct oc_sha256 *h, char hex[OC_CKPT_SHA_HEX]);
/* One buffer's digest. */
void oc_sha256_hex(const void *data, size_t n, char hex[OC_CKPT_SHA_HEX]);
/* A whole file's digest and size: 0, or -1 ("path: cannot read: ..."). */
int oc_sha256_file(const char *path, char hex[OC_CKPT_SHA_HEX], int64_t *bytes,
                   struct oc_status *st);

struct oc_ckpt_file {
    struct oc_outfile out;         /* out.f: the stream, out.path: DIR/NAME */
    struct oc_sha256 h;
    int64_t bytes;                 /* written so far */
    char sha256[OC_CKPT_SHA_HEX];  /* after commit */
};

/* Opens a temporary for dir/name (outfile.h). */
int oc_ckpt_file_open(struct oc_ckpt_file *f, const char *dir, const char *name,
                      struct oc_status *st);
int oc_ckpt_file_write(struct oc_ckpt_file *f, const void *data, size_t n,
                       struct oc_status *st);
/* fflush, fsync, fclose, rename to dir/name, fsync dir; the digest in
 * f->sha256. On failure the temporary is removed. */
int oc_ckpt_file_commit(struct oc_ckpt_file *f, struct oc_status *st);
/* Closes and removes the temporary (after a failed write). */
void oc_ckpt_file_abandon(struct oc_ckpt_file *f);
/* A whole small file (manifest, latest) written atomically. */
int oc_ckpt_write_text(const char *dir, const char *name, const char *text,
                       struct oc_status *st);

/* rm -r of a checkpoint folder: its files, then the folder (one level:
 * checkpoints have no subfolders). A missing folder is not an error. */
int oc_ckpt_remove_dir(const char *dir, struct oc_status *st);
/* The whole file, NUL-terminated (free it), or NULL with st->msg. */
char *oc_ckpt_read_text(const char *path, struct oc_status *st);
/* Reads n bytes at offset of an open file: 0, or -1 naming `where`. */
int oc_ckpt_read_at(FILE *f, int64_t offset, void *buf, size_t n, const char *where,
                    struct oc_status *st);

#endif
