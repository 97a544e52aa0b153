/* paths.h: where shipped models and topologies are found.
 *
 *   char path[4096];
 *   if (oc_data_path("models", "llama2-70b", path, sizeof path, &st) != 0) ...
 *
 * A name holding '/' or ending in ".json" is a path and is used as it is.
 * Any other name is looked up as <dir>/<kind>/<name>.json in, in order:
 * $OCSIM_DATA_DIR, the source tree the binary was built from, and the
 * install prefix's share/ocsim. The error lists the shipped names.
 */
#ifndef OC_PATHS_H
#define OC_PATHS_H

#include <stddef.h>

#include "status.h"

int oc_data_path(const char *kind, const char *name, char *out, size_t n,
                 struct oc_status *st);

/* Writes the shipped names of `kind` (comma separated) into buf. */
void oc_data_list(const char *kind, char *buf, size_t n);

/* The longest output folder name oc_mkdir_p takes: the commands write
 * "<dir>/<file>" into 4096-byte path buffers (PATH_MAX), so a longer folder
 * would cut the file's name short, and write another file, silently. */
#define OC_DIR_MAX_BYTES 3840

/* mkdir -p: creates dir and its parents; 0 when it exists afterwards. A
 * name longer than OC_DIR_MAX_BYTES is refused. */
int oc_mkdir_p(const char *dir, struct oc_status *st);

#endif
