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
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

long oc_gp_rgb(const char *hex) { return strtol(hex + 1, NULL, 16); }

/* ------------------------------------------------------------------ */
/* Files                                                                */

FILE *oc_gp_open(const char *dir, const char *name, struct oc_status *st)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    return f;
}

int oc_gp_close(FILE *f, const char *dir, const char *name, struct oc_status *st)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return oc_fail(st, "%s/%s: writing failed", dir, name);
    return 0;
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

int oc_plot_render(const char *dir, const struct oc_plot_opts *o,
                   const char *const *names, int n, struct oc_status *st)
{
    if (o->no_render || n == 0)
        return 0;
    const char *prog = o->gnuplot ? o->gnuplot : getenv("OCSIM_GNUPLOT");
    if (!prog || !prog[0])
        prog = "gnuplot";
    char log_path[4096];
    snprintf(log_path, sizeof log_path, "%s/gnuplot.log", dir);
    int lf = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (lf < 0) {
        oc_fail(st, "plots not rendered: %s: cannot write: %s", log_path, strerror(errno));
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < n && !failed; i++) {
        char script[256];
        snprintf(script, sizeof script, "%s.gp", names[i]);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            oc_fail(st, "cannot start %s: %s; the scripts and data are in %s", prog,
                    strerror(errno), dir);
            failed = 1;
            break;
        }
        if (pid == 0) {
            /* Child: the folder as working directory (the scripts use
             * relative names), gnuplot's output into the log. */
            if (chdir(dir) != 0)
                _exit(126);
            dup2(lf, STDOUT_FILENO);
            dup2(lf, STDERR_FILENO);
            execlp(prog, prog, script, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            continue;
        failed = 1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
            oc_fail(st, "plots not rendered: '%s' was not found (install gnuplot, or set "
                        "OCSIM_GNUPLOT); the scripts and data are in %s: run "
                        "`gnuplot NAME.gp` there",
                    prog, dir);
        } else {
            char tail[256];
            log_tail(dir, tail, sizeof tail);
            oc_fail(st, "plots not rendered: %s %s failed (%s %d)%s%s; see %s",
                    prog, script, WIFEXITED(status) ? "exit" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                    tail[0] ? ": " : "", tail, log_path);
        }
    }
    close(lf);
    return failed ? 1 : 0;
}
