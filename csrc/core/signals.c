/* signals.c: Ctrl-C (SIGINT) and SIGTERM as a request to stop at the end of the current
 * training step, so that a checkpoint can be written first. The handler only records the
 * signal; a second one while the first is still unanswered ends the process as the signal
 * would have (the user insists). One process-wide record: a signal handler can reach nothing
 * else, and a process has one disposition per signal. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "../moontorch.h"
#include "error.h"

static volatile sig_atomic_t caught_signal;
static struct sigaction previous_int, previous_term;
static int catching;

static void on_stop_signal(int sig) {
  if (caught_signal) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  caught_signal = sig;
}

mt_status mt_signals_catch(int on) {
  if (on && !catching) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* reads and writes in progress go on instead of failing with EINTR */
    caught_signal = 0;
    if (sigaction(SIGINT, &sa, &previous_int) != 0)
      return mt__error(MT_ERR_IO, "signals: cannot catch SIGINT: %s", strerror(errno));
    if (sigaction(SIGTERM, &sa, &previous_term) != 0) {
      int e = errno;
      sigaction(SIGINT, &previous_int, NULL);
      return mt__error(MT_ERR_IO, "signals: cannot catch SIGTERM: %s", strerror(e));
    }
    catching = 1;
  } else if (!on && catching) {
    sigaction(SIGINT, &previous_int, NULL);
    sigaction(SIGTERM, &previous_term, NULL);
    catching = 0;
  }
  return MT_OK;
}

int mt_signals_caught(void) { return caught_signal; }

void mt_signals_clear(void) { caught_signal = 0; }
