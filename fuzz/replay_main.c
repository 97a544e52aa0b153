/* replay_main.c: a main() for the fuzz targets where libFuzzer is not
 * there (gcc, the Asan build's ctest): runs LLVMFuzzerTestOneInput once
 * on each file named, and on each file inside each folder named, in name
 * order, so that the seed corpora and the regression inputs of fuzz/
 * replay on every build.
 *
 *   fuzz_replay_layout [--known fuzz/known.txt] fuzz/corpus/layout fuzz/regressions/layout
 *
 * --known: the ids of that list (its first word per line; '#' starts a
 * comment) are the known defects tolerated (fuzz_check.h). A failing
 * input ends the run with the check's "fuzz: ..." line (or the
 * sanitizer's report) and a line naming the input. Exit 0 and one summary
 * line otherwise.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_check.h"

/* A sanitizer's report ends the process without abort(): its death
 * callback names the input (fz_fail names it itself). */
#if defined(__SANITIZE_ADDRESS__)
#define OC_HAVE_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OC_HAVE_SANITIZER 1
#endif
#endif
#ifdef OC_HAVE_SANITIZER
#include <sanitizer/common_interface_defs.h>
static void name_input(void)
{
    if (fz_current_input)
        fprintf(stderr, "replay: the input was %s\n", fz_current_input);
}
#endif

static void read_known(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open (%s)\n", path, strerror(errno));
        exit(2);
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char id[64];
        if (line[0] != '#' && sscanf(line, "%63s", id) == 1)
            fz_allow(id);
    }
    fclose(f);
}

static long replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open (%s)\n", path, strerror(errno));
        exit(2);
    }
    size_t cap = 4096, n = 0, k;
    unsigned char *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        exit(2);
    }
    fz_current_input = path;
    LLVMFuzzerTestOneInput(buf, n);
    fz_current_input = NULL;
    free(buf);
    return 1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static long replay_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    if (!S_ISDIR(sb.st_mode))
        return replay_file(path);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap)
            names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        snprintf(names[n++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    long count = 0;
    for (size_t i = 0; i < n; i++) {
        count += replay_path(names[i]);
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--known") == 0) {
        read_known(argv[2]);
        first = 3;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: %s [--known FILE] FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
#ifdef OC_HAVE_SANITIZER
    __sanitizer_set_death_callback(name_input);
#endif
    LLVMFuzzerInitialize(&argc, &argv);
    long count = 0;
    for (int i = first; i < argc; i++)
        count += replay_path(argv[i]);
    printf("replay: %ld inputs, every check held\n", count);
    return 0;
}
