/* outfile.c: output files written whole or not at all (see outfile.h).
 *
 * The temporary is written through a stdio stream over a glibc cookie
 * (fopencookie) rather than fdopen: when a buffered write(2) fails, stdio
 * sets the stream's error flag but the errno is gone by the time anyone
 * looks (a later fflush finds nothing to write and succeeds), and the
 * reason is what the user needs ("No space left on device", "File too
 * large"). The cookie's write keeps the first errno.
 */
#define _GNU_SOURCE /* fopencookie */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Distinguishes the temporaries of one process (the ranks of `ocsim-exec
 * --no-mpi` are threads of one process). */
static atomic_uint tmp_counter;

/* The path as a message shows it: "stdout" for "-", and a long path cut
 * to its last ~240 bytes (at a UTF-8 character's start) so that the reason
 * after it still fits in OC_MSG_MAX. */
static const char *shown(const char *path, char *buf, size_t n)
{
    if (strcmp(path, "-") == 0)
        return "stdout";
    const size_t keep = 240, len = strlen(path);
    if (len <= keep || n < keep + 4)
        return path;
    const char *tail = path + len - keep;
    while ((*tail & 0xC0) == 0x80) /* a continuation byte */
        tail++;
    snprintf(buf, n, "...%s", tail);
    return buf;
}

static int fail_path(struct oc_status *st, const char *path, const char *reason)
{
    char b[256];
    return oc_fail(st, "%s: cannot write: %s", shown(path, b, sizeof b), reason);
}

/* The first failure is the one reported: later ones follow from it. */
static void record(struct oc_outfile *o, int err, const char *what)
{
    if (o->err == 0) {
        o->err = err ? err : -1;
        o->err_what = what;
    }
}

static int fail_recorded(const struct oc_outfile *o, struct oc_status *st)
{
    char reason[160];
    if (o->err > 0)
        snprintf(reason, sizeof reason, "%s", strerror(o->err));
    else
        snprintf(reason, sizeof reason, "a %s failed", o->err_what);
    return fail_path(st, o->path, reason);
}

static int open_direct(struct oc_outfile *o, struct oc_status *st)
{
    o->direct = 1;
    o->f = strcmp(o->path, "-") == 0 ? stdout : fopen(o->path, "w");
    return o->f ? 0 : fail_path(st, o->path, strerror(errno));
}

/* The descriptor under the stream, and the first errno a write got. */
struct sink {
    int fd;
    int err;
};

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    struct sink *s = cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(s->fd, buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (s->err == 0)
                s->err = k < 0 ? errno : EIO;
            break; /* short: stdio sets the error flag */
        }
        done += (size_t)k;
    }
    return (ssize_t)done;
}

static int sink_seek(void *cookie, off64_t *pos, int whence)
{
    struct sink *s = cookie;
    off_t r = lseek(s->fd, (off_t)*pos, whence);
    if (r < 0)
        return -1;
    *pos = (off64_t)r;
    return 0;
}

static int sink_close(void *cookie)
{
    struct sink *s = cookie;
    int rc = close(s->fd);
    if (rc != 0 && s->err == 0)
        s->err = errno;
    return rc;
}

/* The errno the sink kept, else errno (or -1: unknown). */
static int sink_errno(const struct oc_outfile *o, int fallback)
{
    const struct sink *s = o->sink;
    return s && s->err ? s->err : fallback;
}

/* Creates a fresh temporary next to o->path: ".NAME.PID.N.tmp", or
 * ".ocsim.PID.N.tmp" where NAME is too long for that. */
static int open_tmp(struct oc_outfile *o, const char *base, int dirlen)
{
    int short_name = 0;
    for (;;) {
        unsigned n = atomic_fetch_add(&tmp_counter, 1u);
        int k = snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.%ld.%u.tmp", dirlen, o->path,
                         short_name ? "ocsim" : base, (long)getpid(), n);
        if (k < 0 || (size_t)k >= sizeof o->tmp) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0)
            return fd;
        if (errno == ENAMETOOLONG && !short_name)
            short_name = 1;
        else if (errno != EEXIST)
            return -1;
    }
}

/* The checked stream over the temporary's descriptor fd (o->tmp). */
static int attach(struct oc_outfile *o, int fd, struct oc_status *st)
{
    struct sink *s = oc_xcalloc(1, sizeof *s);
    s->fd = fd;
    static const cookie_io_functions_t io = {
        .read = NULL, .write = sink_write, .seek = sink_seek, .close = sink_close};
    o->f = fopencookie(s, "wb", io);
    if (!o->f) {
        const int e = errno;
        close(fd);
        free(s);
        unlink(o->tmp);
        return fail_path(st, o->path, strerror(e));
    }
    o->sink = s;
    return 0;
}

/* Checks and keeps the final name; 1: write it in place (direct), 0: a
 * temporary is needed, -1: refused (st). */
static int name_path(struct oc_outfile *o, const char *path, struct oc_status *st)
{
    memset(o, 0, sizeof *o);
    if (strlen(path) >= sizeof o->path)
        return fail_path(st, path, "the path is too long");
    memcpy(o->path, path, strlen(path) + 1);
    struct stat sb;
    const int exists = stat(path, &sb) == 0; /* through a symbolic link */
    if (strcmp(path, "-") == 0 || (exists && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)))
        return 1;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
        (exists && S_ISDIR(sb.st_mode)))
        return fail_path(st, path, "it is a folder");
    return 0;
}

int oc_outfile_open(struct oc_outfile *o, const char *path, struct oc_status *st)
{
    const int kind = name_path(o, path, st);
    if (kind != 0)
        return kind > 0 ? open_direct(o, st) : -1;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int fd = open_tmp(o, base, slash ? (int)(slash - path) + 1 : 0);
    if (fd < 0)
        return fail_path(st, path, strerror(errno));
    return attach(o, fd, st);
}

int oc_outfile_open_partial(struct oc_outfile *o, const char *path, const char *partial,
                            struct oc_status *st)
{
    const int kind = name_path(o, path, st);
    if (kind != 0)
        return kind > 0 ? open_direct(o, st) : -1;
    if (strlen(partial) >= sizeof o->tmp)
        return fail_path(st, partial, "the path is too long");
    memcpy(o->tmp, partial, strlen(partial) + 1);
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return fail_path(st, partial, strerror(errno));
    return attach(o, fd, st);
}

int oc_outfile_fd(const struct oc_outfile *o)
{
    const struct sink *s = o->sink;
    return s ? s->fd : o->f ? fileno(o->f) : -1;
}

int oc_outfile_write(struct oc_outfile *o, const void *data, size_t n,
                     struct oc_status *st)
{
    OC_ASSERT(o->f);
    if (n > 0 && fwrite(data, 1, n, o->f) != n)
        record(o, sink_errno(o, errno), "write");
    return o->err ? fail_recorded(o, st) : 0;
}

int oc_outfile_check(struct oc_outfile *o, struct oc_status *st)
{
    OC_ASSERT(o->f);
    if (o->err == 0 && fflush(o->f) != 0)
        record(o, sink_errno(o, errno), "write");
    if (o->err == 0 && ferror(o->f))
        record(o, sink_errno(o, 0), "write");
    return o->err ? fail_recorded(o, st) : 0;
}

int oc_outfile_rewind(struct oc_outfile *o, struct oc_status *st)
{
    if (oc_outfile_check(o, st) != 0)
        return -1;
    if (o->direct)
        return fail_path(st, o->path, "cannot rewrite it in place");
    const struct sink *s = o->sink;
    if (ftruncate(s->fd, 0) != 0) {
        record(o, errno, "truncate");
        return fail_recorded(o, st);
    }
    rewind(o->f);
    return 0;
}

/* Closes the stream (and the temporary's descriptor); 0 or an errno. */
static int close_stream(struct oc_outfile *o)
{
    int e = 0;
    if (o->f && o->f != stdout && fclose(o->f) != 0)
        e = sink_errno(o, errno);
    o->f = NULL;
    free(o->sink);
    o->sink = NULL;
    return e;
}

void oc_outfile_abandon(struct oc_outfile *o)
{
    const int had = o->f != NULL;
    close_stream(o);
    if (had && !o->direct)
        unlink(o->tmp);
}

/* The folder of a path ("." for a bare name, "/" for "/x"). */
static void dir_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

static int rename_into_place(const char *tmp, const char *path, struct oc_status *st)
{
    if (rename(tmp, path) != 0) {
        const int e = errno;
        unlink(tmp);
        char reason[160];
        snprintf(reason, sizeof reason, "renaming the temporary onto it failed: %s",
                 strerror(e));
        return fail_path(st, path, reason);
    }
    char dir[OC_OUTFILE_PATH_MAX];
    dir_of(path, dir, sizeof dir);
    return oc_fsync_dir(dir, st);
}

int oc_outfile_commit(struct oc_outfile *o, struct oc_status *st)
{
    OC_ASSERT(o->f);
    oc_outfile_check(o, NULL);
    if (o->direct) {
        const int e = close_stream(o);
        if (e)
            record(o, e, "close");
        return o->err ? fail_recorded(o, st) : 0;
    }
    const struct sink *s = o->sink;
    if (o->err == 0 && fsync(s->fd) != 0)
        record(o, errno, "fsync");
    const int e = close_stream(o); /* the descriptor is closed even when it fails */
    if (e)
        record(o, e, "close");
    if (o->err) {
        unlink(o->tmp);
        return fail_recorded(o, st);
    }
    return rename_into_place(o->tmp, o->path, st);
}

int oc_outfile_write_all(const char *path, const void *data, size_t n,
                         struct oc_status *st)
{
    struct oc_outfile o;
    if (oc_outfile_open(&o, path, st) != 0)
        return -1;
    if (oc_outfile_write(&o, data, n, st) != 0) {
        oc_outfile_abandon(&o);
        return -1;
    }
    return oc_outfile_commit(&o, st);
}

int oc_outfile_publish(const char *tmp, const char *path, struct oc_status *st)
{
    int fd = open(tmp, O_RDONLY | O_CLOEXEC);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0) {
        if (fsync(fd) != 0 && errno != EINVAL)
            e = errno;
        close(fd);
    }
    if (e) {
        unlink(tmp);
        return fail_path(st, path, strerror(e));
    }
    return rename_into_place(tmp, path, st);
}

int oc_fsync_dir(const char *dir, struct oc_status *st)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
