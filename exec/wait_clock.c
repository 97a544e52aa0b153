/* wait_clock.c: see wait_clock.h. */
#define _POSIX_C_SOURCE 200809L
#include "wait_clock.h"

#include <sched.h>
#include <time.h>

double oc_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void oc_wait_pace(double waited_s, long *sleep_ns)
{
    if (waited_s < 1e-3) {
        sched_yield();
        return;
    }
    *sleep_ns = *sleep_ns ? *sleep_ns * 2 : 10000;
    if (*sleep_ns > 1000000)
        *sleep_ns = 1000000;
    struct timespec ts = {0, *sleep_ns};
    nanosleep(&ts, NULL);
}
