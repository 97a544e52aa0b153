/* commands.h: one function per `ocsim` command, each in tools/cmd_<name>.c.
 * A command returns the process exit code: 0 success, 1 a check failed
 * (compare beyond tolerance), 2 bad input (one line on stderr). */
#ifndef OC_COMMANDS_H
#define OC_COMMANDS_H

int oc_cmd_compare(int argc, char **argv);
int oc_cmd_goodput(int argc, char **argv);
int oc_cmd_layouts(int argc, char **argv);
int oc_cmd_memory(int argc, char **argv);
int oc_cmd_simulate(int argc, char **argv);
int oc_cmd_sweep(int argc, char **argv);
int oc_cmd_validate(int argc, char **argv);

#endif
