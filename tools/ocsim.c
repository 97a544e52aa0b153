/* ocsim.c: the command line. Dispatches to tools/cmd_<name>.c; each command
 * parses its own flags with cli/options.c. */
#include <stdio.h>
#include <string.h>

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
