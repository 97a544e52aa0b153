/* sim_log.h: SimGrid's xbt logging for the files of sim/, with the DEBUG
 * level kept in release builds. Each file of sim/ includes this instead of
 * <xbt/log.h> and declares its own category under "ocsim" (defined in
 * engine.c), e.g.
 *
 *   #include "sim_log.h"
 *   XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_replay, ocsim, "ocsim: replay");
 *   XBT_DEBUG("rank %" PRId64 " op %" PRId64, r, i);
 *
 * and a run shows it with --log=ocsim_replay.thres:debug. Why the undef:
 * xbt/log.h compiles every request below VERBOSE out when NDEBUG is set
 * (CMake's Release does), which would leave the per-op trace asked for at
 * run time silent. A disabled request costs one comparison.
 */
#ifndef OC_SIM_LOG_H
#define OC_SIM_LOG_H

#include <xbt/log.h>

#undef XBT_LOG_STATIC_THRESHOLD
#define XBT_LOG_STATIC_THRESHOLD xbt_log_priority_none

#endif
