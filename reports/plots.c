/* plots.c: the part of the plots every plot writer shares (see plots.h and
 * plot_write.h): writing NAME.gp and NAME.dat, the head and tail of every
 * script, and the gnuplot runs that turn the scripts into PNG and SVG. The
 * scripts are generated as text (no template folder to find at run time)
 * and left in the output folder, so that restyling a plot is editing
 * NAME.gp and rerunning it.
 *
 * What it is not: any particular plot. The sweep plots are in
 * plot_sweep.c, the pipeline Gantt chart in plot_pipeline.c, the scatter
 * plot of `ocsim compare` in compare_report.c; and not a plotting library:
 * every picture is gnuplot's.
 */
#define _POSIX_C_SOURCE 200809L
#include "plot_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

long oc_gp_rgb(const char *hex) { return strtol(hex + 1, NULL, 16); }

/* ------------------------------------------------------------------ */
/* Files                                                                */

FILE *oc_gp_open(struct oc_outfile *of, const char *dir, const char *name,
                 struct oc_status *st)
{
    char path[OC_OUTFILE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return oc_outfile_open(of, path, st) == 0 ? of->f : NULL;
}

int oc_gp_close(struct oc_outfile *of, struct oc_status *st)
{
    return oc_outfile_commit(of, st);
}

void oc_gp_remove(const char *dir, const char *name)
{
    static const char *const ext[] = {"gp", "dat", "png", "svg"};
    char path[4096];
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext[i]);
        unlink(path);
    }
}

void oc_gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

/* ------------------------------------------------------------------ */
/* Scripts and options                                                  */

void oc_gp_script_begin(FILE *f, const char *name, const char *what, const char *writer,
                        int width_px, int height_px)
{
    fprintf(f,
            "# %s.gp: %s.\n"
            "# Written by %s. Restyle it and rerun in this folder: gnuplot %s.gp\n"
            "# Data: %s.dat. Makes %s.png and %s.svg.\n"
            "set encoding utf8\n"
            "set terminal pngcairo size %d,%d font \"sans,10\" noenhanced\n"
            "set output '%s.png'\n",
            name, what, writer, name, name, name, name, width_px, height_px, name);
}

void oc_gp_script_end(FILE *f, const char *name, int width_px, int height_px)
{
    fprintf(f,
            "set terminal svg size %d,%d dynamic font \"sans,10\" noenhanced "
            "background rgb 'white'\n"
            "set output '%s.svg'\n"
            "replot\n"
            "unset output\n",
            width_px, height_px, name);
}

struct oc_plot_opts oc_plot_opts_fill(const struct oc_plot_opts *o)
{
    struct oc_plot_opts r = o ? *o : OC_PLOT_OPTS_DEFAULT;
    if (r.top_n < 1)
        r.top_n = 30;
    if (r.width_px < 200)
        r.width_px = 1200;
    if (r.height_px < 200)
        r.height_px = 700;
    return r;
}

/* ------------------------------------------------------------------ */
/* Running gnuplot                                                      */

/* The last non-empty line of gnuplot.log, to quote in an error. */
static void log_tail(const char *dir, char *out, size_t n)
{
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/gnuplot.log", dir);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        size_t k = strlen(line);
        while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r' || line[k - 1] == ' '))
            line[--k] = '\0';
        if (k > 0)
            snprintf(out, n, "%.200s", line);
    }
    fclose(f);
}

/* The scripts render in one folder beside the outputs,
 * DIR/.render.PID.tmp, holding a link to each NAME.dat; a gnuplot per core
 * (render_procs) runs there on its share of the ../NAME.gp in turn
 * (`reset` between them, so that no setting of one script leaks into the
 * next; not one process per plot: each start costs 0.02-0.04 s here) and
 * writes NAME.png and NAME.svg into it. Only images that are complete are then renamed into
 * DIR (outfile.h's publish), so a failed render leaves no image, not even
 * an empty one. The check is what tells: gnuplot exits 0 when its images
 * could not be written (on a full disk it leaves a PNG cut at a page
 * boundary and an empty SVG). */
enum { OC_RENDER_PROCS_MAX = 4 };

struct render {
    const char *dir, *prog;
    const char *const *names;
    int n;
    int log_fd;
    char tmp[OC_OUTFILE_PATH_MAX];
};

static const char *const image_ext[] = {"png", "svg"};

/* A PNG ends with its IEND chunk (length 0, "IEND", CRC AE 42 60 82: PNG
 * spec, sec. 11.2.5); gnuplot's SVG ends with "</svg>" and a newline.
 * Returns 1 complete, 0 cut short, -1 absent; *bytes its size. */
static int image_complete(const char *path, int png, long *bytes)
{
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D',
                                           0xAE, 0x42, 0x60, 0x82};
    FILE *f = fopen(path, "rb");
    *bytes = 0;
    if (!f)
        return -1;
    unsigned char tail[16];
    size_t n = 0;
    if (fseek(f, 0, SEEK_END) == 0 && (*bytes = ftell(f)) >= (long)sizeof tail &&
        fseek(f, -(long)sizeof tail, SEEK_END) == 0)
        n = fread(tail, 1, sizeof tail, f);
    fclose(f);
    if (n != sizeof tail)
        return 0;
    if (png)
        return memcmp(tail + 4, iend, sizeof iend) == 0;
    size_t k = n;
    while (k > 0 && (tail[k - 1] == '\n' || tail[k - 1] == '\r' || tail[k - 1] == ' '))
        k--;
    return k >= 6 && memcmp(tail + k - 6, "</svg>", 6) == 0;
}

static void render_cleanup(const struct render *r)
{
    char p[OC_OUTFILE_PATH_MAX + 64];
    static const char *const ext[] = {"dat", "png", "svg"};
    for (int j = 0; j < r->n; j++)
        for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
            snprintf(p, sizeof p, "%s/%s.%s", r->tmp, r->names[j], ext[i]);
            unlink(p);
        }
    rmdir(r->tmp);
}

/* The folder and its links to each NAME.dat (a symbolic link, else a hard
 * link). */
static int render_prepare(struct render *r, struct oc_status *st)
{
    snprintf(r->tmp, sizeof r->tmp, "%s/.render.%ld.tmp", r->dir, (long)getpid());
    render_cleanup(r); /* a crashed run of this pid's */
    if (mkdir(r->tmp, 0777) != 0)
        return oc_fail(st, "%s: cannot create folder: %s", r->tmp, strerror(errno));
    for (int j = 0; j < r->n; j++) {
        char dat[OC_OUTFILE_PATH_MAX + 64], rel[300], link_path[OC_OUTFILE_PATH_MAX + 64];
        snprintf(rel, sizeof rel, "../%s.dat", r->names[j]);
        snprintf(dat, sizeof dat, "%s/%s.dat", r->dir, r->names[j]);
        snprintf(link_path, sizeof link_path, "%s/%s.dat", r->tmp, r->names[j]);
        if (symlink(rel, link_path) != 0 && link(dat, link_path) != 0) {
            const int e = errno;
            render_cleanup(r);
            return oc_fail(st, "%s: cannot link %s there: %s", r->tmp, dat, strerror(e));
        }
    }
    return 0;
}

/* Why an image is cut short: the disk or the file size limit, as far as
 * can be told afterwards. */
static void cut_reason(const char *dir, long bytes, char *out, size_t n)
{
    struct statvfs vs;
    struct rlimit rl;
    if (statvfs(dir, &vs) == 0 && vs.f_bavail == 0)
        snprintf(out, n, "%s (gnuplot's image stops at %ld bytes)", strerror(ENOSPC), bytes);
    else if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
             (rlim_t)bytes >= rl.rlim_cur)
        snprintf(out, n, "%s (gnuplot's image stops at %ld bytes)", strerror(EFBIG), bytes);
    else
        snprintf(out, n, "gnuplot's image is incomplete (%ld bytes; see gnuplot.log)", bytes);
}

/* The images of script j: 1 both complete, 0 one missing, -1 one cut
 * short (st says which). */
static int render_check(const struct render *r, int j, struct oc_status *st)
{
    for (int i = 0; i < 2; i++) {
        char tmp[OC_OUTFILE_PATH_MAX + 64], dst[OC_OUTFILE_PATH_MAX + 64];
        snprintf(tmp, sizeof tmp, "%s/%s.%s", r->tmp, r->names[j], image_ext[i]);
        snprintf(dst, sizeof dst, "%s/%s.%s", r->dir, r->names[j], image_ext[i]);
        long bytes;
        const int ok = image_complete(tmp, i == 0, &bytes);
        if (ok < 0)
            return 0;
        if (ok == 0) {
            char why[200];
            cut_reason(r->tmp, bytes, why, sizeof why);
            return oc_fail(st, "%s: cannot write: %s", dst, why);
        }
    }
    return 1;
}

/* After gnuplot ran (exit status `status`): when it exited 0, an image
 * cut short is an error (-1, nothing published); otherwise the scripts
 * whose images are complete are published, and gnuplot's failure, or the
 * first script without its images, is a warning (1). */
static int render_publish(struct render *r, int status, struct oc_status *st)
{
    const int ran = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    int first_missing = -1;
    for (int j = 0; j < r->n; j++) {
        const int ok = render_check(r, j, st);
        if (ok < 0 && ran)
            return -1;
        if (ok != 1 && first_missing < 0)
            first_missing = j;
    }
    for (int j = 0; j < r->n; j++) {
        if (render_check(r, j, st) != 1)
            continue;
        for (int i = 0; i < 2; i++) {
            char tmp[OC_OUTFILE_PATH_MAX + 64], dst[OC_OUTFILE_PATH_MAX + 64];
            snprintf(tmp, sizeof tmp, "%s/%s.%s", r->tmp, r->names[j], image_ext[i]);
            snprintf(dst, sizeof dst, "%s/%s.%s", r->dir, r->names[j], image_ext[i]);
            if (oc_outfile_publish(tmp, dst, st) != 0)
                return -1;
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        oc_fail(st, "plots not rendered: '%s' was not found (install gnuplot, or set "
                    "OCSIM_GNUPLOT); the scripts and data are in %s: run "
                    "`gnuplot NAME.gp` there",
                r->prog, r->dir);
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char tail[256];
        log_tail(r->dir, tail, sizeof tail);
        oc_fail(st, "plots not rendered: %s %s.gp failed (%s %d)%s%s; see %s/gnuplot.log",
                r->prog, r->names[first_missing >= 0 ? first_missing : r->n - 1],
                WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                tail[0] ? ": " : "", tail, r->dir);
        return 1;
    }
    if (first_missing >= 0) {
        oc_fail(st, "plots not rendered: %s made no %s.png or .svg; see %s/gnuplot.log",
                r->prog, r->names[first_missing], r->dir);
        return 1;
    }
    return 0;
}

/* How many gnuplots render at once: one per online core, at most one per
 * script. Each renders its share of the scripts in turn. */
static int render_procs(int n)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int k = cores > 1 ? (int)(cores < OC_RENDER_PROCS_MAX ? cores : OC_RENDER_PROCS_MAX) : 1;
    return k < n ? k : n;
}

/* Starts gnuplot on scripts g, g + k, g + 2k, ... of r in r->tmp. Returns
 * its pid, or -1 (errno set) when it could not be started. */
static pid_t render_start(const struct render *r, int g, int k)
{
    /* argv: prog ../a.gp -e reset ../b.gp ... NULL */
    char **argv = oc_xcalloc((size_t)(3 * r->n + 2), sizeof *argv);
    char (*script)[300] = oc_xcalloc((size_t)r->n, sizeof *script);
    int a = 0;
    argv[a++] = (char *)r->prog;
    for (int j = g; j < r->n; j += k) {
        snprintf(script[j], sizeof script[j], "../%s.gp", r->names[j]);
        if (j > g) {
            argv[a++] = (char *)"-e";
            argv[a++] = (char *)"reset";
        }
        argv[a++] = script[j];
    }
    argv[a] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* Child: the render folder as working directory (the scripts use
         * relative names), gnuplot's output into the log. */
        if (chdir(r->tmp) != 0)
            _exit(126);
        dup2(r->log_fd, STDOUT_FILENO);
        dup2(r->log_fd, STDERR_FILENO);
        execvp(r->prog, argv);
        _exit(127);
    }
    const int e = errno;
    free(script);
    free(argv);
    errno = e;
    return pid;
}

/* The gnuplots on every script in r->tmp (render_procs of them, the
 * scripts dealt out in turn: the four sweep plots take about 0.04 s each
 * here, and one process rendering them one after the other was a seventh
 * of a 64-card sweep's wall time), then the publication: 0, 1 (a warning
 * in st) or -1. The status judged is the first failing gnuplot's (127,
 * not found, before any other), else 0. */
static int render_all(struct render *r, struct oc_status *st)
{
    if (render_prepare(r, st) != 0)
        return -1;
    pid_t pids[OC_RENDER_PROCS_MAX];
    const int k = render_procs(r->n);
    int started = 0, start_errno = 0;
    for (int g = 0; g < k; g++) {
        pids[g] = render_start(r, g, k);
        if (pids[g] < 0) {
            start_errno = errno;
            break;
        }
        started++;
    }
    int status = 0;
    for (int g = 0; g < started; g++) {
        int s = 0;
        while (waitpid(pids[g], &s, 0) < 0 && errno == EINTR)
            ;
        const int failed = !WIFEXITED(s) || WEXITSTATUS(s) != 0;
        const int missing = WIFEXITED(s) && WEXITSTATUS(s) == 127;
        if ((failed && status == 0) || (missing && !(WIFEXITED(status) && WEXITSTATUS(status) == 127)))
            status = s;
    }
    if (started < k) {
        oc_fail(st, "plots not rendered: cannot start %s: %s; the scripts and data are in %s",
                r->prog, strerror(start_errno), r->dir);
        render_cleanup(r);
        return 1;
    }
    const int rc = render_publish(r, status, st);
    render_cleanup(r);
    return rc;
}

int oc_plot_render(const char *dir, const struct oc_plot_opts *o,
                   const char *const *names, int n, struct oc_status *st)
{
    if (o->no_render || n == 0)
        return 0;
    const char *prog = o->gnuplot ? o->gnuplot : getenv("OCSIM_GNUPLOT");
    if (!prog || !prog[0])
        prog = "gnuplot";
    char log_path[OC_OUTFILE_PATH_MAX + 16];
    snprintf(log_path, sizeof log_path, "%s/gnuplot.log", dir);
    int lf = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (lf < 0) {
        oc_fail(st, "plots not rendered: %s: cannot write: %s", log_path, strerror(errno));
        return 1;
    }
    struct render r = {.dir = dir, .prog = prog, .names = names, .n = n, .log_fd = lf};
    const int rc = render_all(&r, st);
    close(lf);
    return rc;
}
