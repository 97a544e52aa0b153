/* weights_diff.c: `ocsim-weights-diff`, compares two weights.bin files of
 * ocsim-exec (format in exec/main.c, write_weights) tensor by tensor, so
 * that the equivalence test needs no Python.
 *
 *   ocsim-weights-diff [--all] [--tol 1e-5] [--tensor-tol 1e-2] RUN.bin REFERENCE.bin
 *
 * Two figures, both ||a - b|| / ||b|| (L2 norms summed in double; ||a - b||
 * alone when ||b|| is 0): over the whole model (--tol, default 1e-5) and
 * per tensor (--tensor-tol, default 1e-2; --all prints every tensor's).
 * Exit 0 when both are within their tolerance, 1 when not, 2 when the files
 * cannot be read or hold different tensors.
 *
 * Why two tolerances: layouts that are equal in exact arithmetic sum their
 * gradients in different orders, so their weights agree only to rounding.
 * AdamW (Loshchilov & Hutter 2019) divides each gradient by its own running
 * RMS, which turns rounding noise into full-size updates wherever the true
 * gradient is (near) zero: the attention key bias is the clear case, since
 * softmax is invariant to it and its exact gradient is 0, so its computed
 * gradient is pure rounding noise and its update lr*g/(|g|+eps) has a sign
 * set by that noise. After a few steps such a small tensor differs between
 * equivalent layouts by ~1e-4 relative while the model as a whole agrees to
 * ~1e-6 (seen on the tiny model; see tests/exec_equivalence.sh). A wrong
 * tensor (a bias added twice under TP, a gradient not reduced) is off by
 * O(1) and fails the per-tensor check.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tensor {
    char name[17];
    int64_t layer, rows, cols;
};

struct wfile {
    int64_t nt, n;
    struct tensor *t;
    float *w;
};

static int load(const char *path, struct wfile *f)
{
    memset(f, 0, sizeof *f);
    FILE *in = fopen(path, "rb");
    if (!in) {
        fprintf(stderr, "ocsim-weights-diff: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char magic[8];
    int ok = fread(magic, 1, 8, in) == 8 && memcmp(magic, "OCSIMWT1", 8) == 0 &&
             fread(&f->nt, sizeof f->nt, 1, in) == 1 && f->nt > 0 && f->nt < 1000000;
    if (ok) {
        f->t = calloc((size_t)f->nt, sizeof *f->t);
        ok = f->t != NULL;
    }
    for (int64_t i = 0; ok && i < f->nt; i++) {
        int64_t meta[3];
        ok = fread(f->t[i].name, 1, 16, in) == 16 && fread(meta, sizeof meta[0], 3, in) == 3 &&
             meta[1] > 0 && meta[2] > 0 && meta[1] * meta[2] < (INT64_C(1) << 40);
        if (ok) {
            f->t[i].layer = meta[0];
            f->t[i].rows = meta[1];
            f->t[i].cols = meta[2];
            f->n += meta[1] * meta[2];
        }
    }
    if (ok) {
        f->w = malloc((size_t)f->n * sizeof *f->w);
        ok = f->w && fread(f->w, sizeof *f->w, (size_t)f->n, in) == (size_t)f->n &&
             fgetc(in) == EOF;
    }
    fclose(in);
    if (!ok) {
        fprintf(stderr, "ocsim-weights-diff: %s: not a complete ocsim-exec weights.bin\n",
                path);
        free(f->t);
        free(f->w);
        memset(f, 0, sizeof *f);
        return -1;
    }
    return 0;
}

static int parse_tol(const char *flag, const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    if (end == s || *end || !(*out >= 0)) {
        fprintf(stderr, "ocsim-weights-diff: %s: '%s' is not a number >= 0\n", flag, s);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    double tol = 1e-5, tensor_tol = 1e-2;
    int all = 0, a = 1;
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (strcmp(argv[a], "--all") == 0) {
            all = 1;
        } else if (strcmp(argv[a], "--tol") == 0 && a + 1 < argc) {
            if (parse_tol("--tol", argv[++a], &tol) != 0)
                return 2;
        } else if (strcmp(argv[a], "--tensor-tol") == 0 && a + 1 < argc) {
            if (parse_tol("--tensor-tol", argv[++a], &tensor_tol) != 0)
                return 2;
        } else {
            break;
        }
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: ocsim-weights-diff [--all] [--tol X] [--tensor-tol Y] "
                        "RUN.bin REFERENCE.bin\n");
        return 2;
    }
    struct wfile x, y;
    if (load(argv[a], &x) != 0)
        return 2;
    if (load(argv[a + 1], &y) != 0) {
        free(x.t);
        free(x.w);
        return 2;
    }
    if (x.nt != y.nt) {
        fprintf(stderr, "ocsim-weights-diff: %lld tensors against %lld\n", (long long)x.nt,
                (long long)y.nt);
        free(x.t);
        free(x.w);
        free(y.t);
        free(y.w);
        return 2;
    }
    double worst = 0, dd_all = 0, bb_all = 0;
    int64_t wi = 0, off = 0;
    for (int64_t i = 0; i < x.nt; i++) {
        const struct tensor *s = &x.t[i], *t = &y.t[i];
        if (strcmp(s->name, t->name) || s->layer != t->layer || s->rows != t->rows ||
            s->cols != t->cols) {
            fprintf(stderr, "ocsim-weights-diff: tensor %lld is %s (layer %lld) %lldx%lld "
                            "against %s (layer %lld) %lldx%lld\n",
                    (long long)i, s->name, (long long)s->layer, (long long)s->rows,
                    (long long)s->cols, t->name, (long long)t->layer, (long long)t->rows,
                    (long long)t->cols);
            return 2;
        }
        const int64_t n = s->rows * s->cols;
        double dd = 0, bb = 0;
        for (int64_t j = 0; j < n; j++) {
            double d = (double)x.w[off + j] - (double)y.w[off + j];
            dd += d * d;
            bb += (double)y.w[off + j] * y.w[off + j];
        }
        dd_all += dd;
        bb_all += bb;
        double rel = bb > 0 ? sqrt(dd / bb) : sqrt(dd);
        if (all)
            printf("%-10s %4lld %.3g\n", s->name, (long long)s->layer, rel);
        if (!(rel <= worst)) { /* NaN counts as worst */
            worst = rel;
            wi = i;
        }
        off += n;
    }
    double whole = bb_all > 0 ? sqrt(dd_all / bb_all) : sqrt(dd_all);
    int pass = whole <= tol && worst <= tensor_tol;
    printf("%s: model relative L2 difference %.3g (tolerance %.3g); worst tensor %s "
           "(layer %lld) %.3g (tolerance %.3g)\n",
           pass ? "match" : "DIFFER", whole, tol, x.t[wi].name, (long long)x.t[wi].layer,
           worst, tensor_tol);
    free(x.t);
    free(x.w);
    free(y.t);
    free(y.w);
    return pass ? 0 : 1;
}
