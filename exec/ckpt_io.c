/* ckpt_io.c: SHA-256 over OpenSSL's EVP interface, atomic files, folder
 * operations (see ckpt_io.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "ckpt_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

/* ------------------------------------------------------------------ */
/* SHA-256                                                              */

void oc_sha256_init(struct oc_sha256 *h)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    OC_ASSERT(c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1);
    h->ctx = c;
}

void oc_sha256_update(struct oc_sha256 *h, const void *data, size_t n)
{
    OC_ASSERT(h->ctx);
    if (n > 0)
        OC_ASSERT(EVP_DigestUpdate((EVP_MD_CTX *)h->ctx, data, n) == 1);
}

void oc_sha256_final(struct oc_sha256 *h, char hex[OC_CKPT_SHA_HEX])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    OC_ASSERT(h->ctx && EVP_DigestFinal_ex((EVP_MD_CTX *)h->ctx, d, &n) == 1 && n == 32);
    EVP_MD_CTX_free((EVP_MD_CTX *)h->ctx);
    h->ctx = NULL;
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

void oc_sha256_hex(const void *data, size_t n, char hex[OC_CKPT_SHA_HEX])
{
    struct oc_sha256 h;
    oc_sha256_init(&h);
    oc_sha256_update(&h, data, n);
    oc_sha256_final(&h, hex);
}

int oc_sha256_file(const char *path, char hex[OC_CKPT_SHA_HEX], int64_t *bytes,
                   struct oc_status *st)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return oc_fail(st, "%s: cannot read: %s", path, strerror(errno));
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = oc_xmalloc(CHUNK);
    struct oc_sha256 h;
    oc_sha256_init(&h);
    int64_t total = 0;
    size_t got;
    while ((got = fread(buf, 1, CHUNK, f)) > 0) {
        oc_sha256_update(&h, buf, got);
        total += (int64_t)got;
    }
    const int err = ferror(f);
    fclose(f);
    free(buf);
    oc_sha256_final(&h, hex);
    if (err)
        return oc_fail(st, "%s: read error", path);
    *bytes = total;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Atomic files                                                         */

int oc_ckpt_file_open(struct oc_ckpt_file *f, const char *dir, const char *name,
                      struct oc_status *st)
{
    memset(f, 0, sizeof *f);
    char path[OC_OUTFILE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (oc_outfile_open(&f->out, path, st) != 0)
        return -1;
    oc_sha256_init(&f->h);
    return 0;
}

int oc_ckpt_file_write(struct oc_ckpt_file *f, const void *data, size_t n,
                       struct oc_status *st)
{
    if (oc_outfile_write(&f->out, data, n, st) != 0)
        return -1;
    oc_sha256_update(&f->h, data, n);
    f->bytes += (int64_t)n;
    return 0;
}

static void hash_drop(struct oc_ckpt_file *f)
{
    if (f->h.ctx) {
        char hex[OC_CKPT_SHA_HEX];
        oc_sha256_final(&f->h, hex);
    }
}

void oc_ckpt_file_abandon(struct oc_ckpt_file *f)
{
    oc_outfile_abandon(&f->out);
    hash_drop(f);
}

int oc_ckpt_file_commit(struct oc_ckpt_file *f, struct oc_status *st)
{
    if (oc_outfile_commit(&f->out, st) != 0) {
        hash_drop(f);
        return -1;
    }
    oc_sha256_final(&f->h, f->sha256);
    return 0;
}

int oc_ckpt_write_text(const char *dir, const char *name, const char *text,
                       struct oc_status *st)
{
    char path[OC_OUTFILE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return oc_outfile_write_all(path, text, strlen(text), st);
}

/* ------------------------------------------------------------------ */
/* Folders and reads                                                    */

int oc_ckpt_remove_dir(const char *dir, struct oc_status *st)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : oc_fail(st, "%s: cannot list: %s", dir, strerror(errno));
    struct dirent *e;
    char path[4400];
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && rc == 0)
            rc = oc_fail(st, "%s: cannot remove: %s", path, strerror(errno));
    }
    closedir(d);
    if (rc == 0 && rmdir(dir) != 0)
        rc = oc_fail(st, "%s: cannot remove: %s", dir, strerror(errno));
    return rc;
}

char *oc_ckpt_read_text(const char *path, struct oc_status *st)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        oc_fail(st, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0, got;
    char *buf = oc_xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap)
            buf = oc_xrealloc(buf, cap *= 2);
    }
    const int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        oc_fail(st, "%s: read error", path);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

int oc_ckpt_read_at(FILE *f, int64_t offset, void *buf, size_t n, const char *where,
                    struct oc_status *st)
{
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0)
        return oc_fail(st, "%s: cannot seek to byte %lld: %s", where, (long long)offset,
                       strerror(errno));
    if (n > 0 && fread(buf, 1, n, f) != n)
        return oc_fail(st, "%s: cannot read %zu bytes at byte %lld", where, n,
                       (long long)offset);
    return 0;
}
