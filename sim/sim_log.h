/* sim_log.h: the XBT logging of sim/; include it instead of <xbt/log.h>.
 *
 *   #include "sim_log.h"
 *   XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_replay, ocsim, "the replay of op lists");
 *   ...
 *   XBT_DEBUG("rank %lld op %lld: %s ends at %.9g s", ...);
 *
 * One category per file of sim/, each a subcategory of "ocsim" (declared
 * once, in engine.c). Traces go at DEBUG; results the user asked for go to
 * the command's output, and a user error comes back as the one-line
 * oc_status message, never as a log line. How to turn a category on
 * (opts.log of the engine, $OCSIM_LOG): engine.h.
 *
 * Why this header: under NDEBUG (CMake's Release) <xbt/log.h> compiles out
 * every request below VERBOSE, which would leave the DEBUG traces only in
 * Debug and Asan builds. Here they stay compiled in; a trace that is off
 * costs one threshold test. What it is not: a logging layer of its own.
 */
#ifndef OC_SIM_LOG_H
#define OC_SIM_LOG_H

#include <xbt/log.h>

#undef XBT_LOG_STATIC_THRESHOLD
#define XBT_LOG_STATIC_THRESHOLD xbt_log_priority_none

#endif
