/* ocsim.c: the command line. Dispatches to tools/cmd_<name>.c; each command
 * parses its own flags with cli/options.c. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "status.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"sweep", oc_cmd_sweep,
     "simulate every layout of N cards in SimGrid, rank them, write CSV, plots, report"},
    {"simulate", oc_cmd_simulate,
     "simulate one layout: metrics, Chrome trace timeline, pipeline Gantt plot"},
    {"layouts", oc_cmd_layouts,
     "list every TP x PP x DP layout for N cards, its memory per GPU and why it fails"},
    {"memory", oc_cmd_memory, "memory per GPU of one layout, stage by stage"},
    {"compare", oc_cmd_compare, "prediction against measurement: errors, verdict, scatter plot"},
    {"validate", oc_cmd_validate,
     "predict published measured runs (a table): error per row, MAPE per table, plot"},
    {"goodput", oc_cmd_goodput,
     "failures and checkpoints over a long run: best interval, goodput, plot"},
};

static void usage(FILE *f)
{
    fputs("usage: ocsim <command> [options]   (ocsim <command> --help)\n\n"
          "Plans how to split transformer training over GPUs.\n\ncommands:\n", f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

/* Transparent huge pages for the heap. A simulation child builds op
 * lists and timelines of tens to hundreds of MB in small and large
 * allocations and writes each once; with 4 KiB pages every first touch
 * (and every copy-on-write page of the forking parent) was a page fault:
 * a third of a 64-card sweep's CPU time (perf: 162 190 faults, 4.9 CPU
 * s; with huge pages 30 330 faults, 2.9 s; docs/benchmarks.md). glibc
 * (2.35 and later) asks the kernel for huge pages for its heap and its
 * mmapped chunks under the tunable glibc.malloc.hugetlb=1, which it reads
 * only at start-up: so ocsim starts itself again once with the tunable
 * added to GLIBC_TUNABLES (execv keeps the process id, nothing has run
 * yet). Advice only: where the kernel's transparent_hugepage is "never",
 * or glibc is older, nothing changes; OCSIM_NO_HUGEPAGES=1 skips it. A
 * GLIBC_TUNABLES that names the tunable already is kept as it is. */
static void heap_huge_pages(int argc, char **argv, char **envp)
{
    (void)argc;
    static const char key[] = "GLIBC_TUNABLES=", add[] = "glibc.malloc.hugetlb=1";
    static char *env[4096];
    static char buf[1024];
    int n = 0, at = -1;
    for (; envp && envp[n]; n++) {
        if (strncmp(envp[n], "OCSIM_NO_HUGEPAGES=", 19) == 0 ||
            (strncmp(envp[n], key, sizeof key - 1) == 0 && strstr(envp[n], "glibc.malloc.hugetlb")))
            return;
        if (strncmp(envp[n], key, sizeof key - 1) == 0)
            at = n;
        if (n + 2 >= (int)(sizeof env / sizeof env[0]))
            return; /* an environment this large: go on without */
        env[n] = envp[n];
    }
    const char *old = at >= 0 ? envp[at] + sizeof key - 1 : "";
    if ((size_t)snprintf(buf, sizeof buf, "%s%s%s%s", key, old, *old ? ":" : "", add) >= sizeof buf)
        return;
    env[at >= 0 ? at : n++] = buf;
    env[n] = NULL;
    execve("/proc/self/exe", argv, env);
    /* no /proc: go on without */
}

/* Run by the dynamic linker before any shared library's initialisers
 * (ELF's DT_PREINIT_ARRAY, with main's arguments): the restart above then
 * skips the first start's library constructors (libsimgrid's ns-3 alone
 * registers thousands of types), about a third of a start's CPU time
 * (docs/benchmarks.md, twelfth session). It calls nothing that needs an
 * initialised libc but the string functions, snprintf and execve. */
__attribute__((used, section(".preinit_array"))) static void (*const oc_preinit)(
    int, char **, char **) = heap_huge_pages;

int main(int argc, char **argv)
{
    /* Bad input is one line on stderr (exit 2); the usage is --help's. */
    if (argc < 2) {
        fputs("ocsim: a command is required (", stderr);
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", commands[i].name);
        fputs("; see ocsim --help)\n", stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    char q[OC_QUOTE_MAX];
    fprintf(stderr, "ocsim: unknown command '%s' (see ocsim --help)\n",
            oc_quote(q, sizeof q, argv[1]));
    return 2;
}
