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
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    snprintf(f->tmp, sizeof f->tmp, "%s/.%s.tmp", dir, name);
    snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
    f->f = fopen(f->tmp, "wb");
    if (!f->f)
        return oc_fail(st, "%s: cannot write: %s", f->tmp, strerror(errno));
    oc_sha256_init(&f->h);
    return 0;
}

int oc_ckpt_file_write(struct oc_ckpt_file *f, const void *data, size_t n,
                       struct oc_status *st)
{
    if (n > 0 && fwrite(data, 1, n, f->f) != n)
        return oc_fail(st, "%s: write failed after %lld bytes: %s", f->tmp,
                       (long long)f->bytes, strerror(errno));
    oc_sha256_update(&f->h, data, n);
    f->bytes += (int64_t)n;
    return 0;
}

void oc_ckpt_file_abandon(struct oc_ckpt_file *f)
{
    if (f->f)
        fclose(f->f);
    f->f = NULL;
    if (f->h.ctx) {
        char hex[OC_CKPT_SHA_HEX];
        oc_sha256_final(&f->h, hex);
    }
    unlink(f->tmp);
}

int oc_ckpt_file_commit(struct oc_ckpt_file *f, struct oc_status *st)
{
    const char *what = NULL;
    if (fflush(f->f) != 0)
        what = "fflush";
    else if (fsync(fileno(f->f)) != 0)
        what = "fsync";
    if (what) {
        const int e = errno;
        oc_ckpt_file_abandon(f);
        return oc_fail(st, "%s: %s failed: %s", f->tmp, what, strerror(e));
    }
    const int rc = fclose(f->f);
    f->f = NULL;
    if (rc != 0) {
        const int e = errno;
        oc_ckpt_file_abandon(f);
        return oc_fail(st, "%s: close failed: %s", f->tmp, strerror(e));
    }
    oc_sha256_final(&f->h, f->sha256);
    if (rename(f->tmp, f->path) != 0) {
        const int e = errno;
        unlink(f->tmp);
        return oc_fail(st, "%s: cannot rename to %s: %s", f->tmp, f->path, strerror(e));
    }
    return oc_ckpt_fsync_dir(f->dir, st);
}

int oc_ckpt_write_text(const char *dir, const char *name, const char *text,
                       struct oc_status *st)
{
    struct oc_ckpt_file f;
    if (oc_ckpt_file_open(&f, dir, name, st) != 0)
        return -1;
    if (oc_ckpt_file_write(&f, text, strlen(text), st) != 0) {
        oc_ckpt_file_abandon(&f);
        return -1;
    }
    return oc_ckpt_file_commit(&f, st);
}

/* ------------------------------------------------------------------ */
/* Folders and reads                                                    */

int oc_ckpt_fsync_dir(const char *dir, struct oc_status *st)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return oc_fail(st, "%s: cannot open folder: %s", dir, strerror(errno));
    /* Some file systems refuse fsync on a folder (EINVAL): their renames
     * are as durable as they get. */
    int rc = fsync(fd);
    const int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL)
        return oc_fail(st, "%s: fsync of the folder failed: %s", dir, strerror(e));
    return 0;
}

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
