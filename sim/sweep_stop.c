/* sweep_stop.c: the SIGINT/SIGTERM handlers and self-pipe of a sweep (see
 * sweep_stop.h). */
#define _POSIX_C_SOURCE 200809L
#include "sweep_stop.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int stop_pipe[2] = {-1, -1};
static volatile sig_atomic_t stop_signal;
static const int caught_signals[] = {SIGINT, SIGTERM};
static int caught[2];

static void on_signal(int sig)
{
    int e = errno;
    if (!stop_signal)
        stop_signal = sig;
    ssize_t k = write(stop_pipe[1], "s", 1); /* non-blocking: a full pipe is fine */
    (void)k;
    errno = e;
}

int oc_sweep_stop_catch(struct oc_status *st)
{
    if (pipe(stop_pipe) != 0)
        return oc_fail(st, "cannot create a pipe: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        fcntl(stop_pipe[i], F_SETFD, FD_CLOEXEC);
        fcntl(stop_pipe[i], F_SETFL, fcntl(stop_pipe[i], F_GETFL) | O_NONBLOCK);
    }
    for (int i = 0; i < 2; i++) {
        struct sigaction sa, old;
        if (sigaction(caught_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0; /* no SA_RESTART: poll returns EINTR */
        caught[i] = sigaction(caught_signals[i], &sa, NULL) == 0;
    }
    return 0;
}

const int *oc_sweep_stop_fd(void)
{
    return &stop_pipe[0];
}

int oc_sweep_stop_signal(void)
{
    return (int)stop_signal;
}

void oc_sweep_stop_ignore(void)
{
    for (int i = 0; i < 2; i++)
        if (caught[i])
            signal(caught_signals[i], SIG_IGN);
    for (int i = 0; i < 2; i++)
        if (stop_pipe[i] >= 0)
            close(stop_pipe[i]);
    stop_pipe[0] = stop_pipe[1] = -1;
}

void oc_sweep_stop_release(void)
{
    for (int i = 0; i < 2; i++)
        if (caught[i]) {
            signal(caught_signals[i], SIG_DFL);
            caught[i] = 0;
        }
}
