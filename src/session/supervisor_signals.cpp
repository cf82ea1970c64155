#include "supervisor_signals.h"

#include <csignal>

namespace dcp {
namespace {

// Static storage is the only thing a signal handler may touch: the signal
// seen, and the handlers we replaced (a command may have its own guard; we
// chain to it so both the command and the session see the interrupt).
volatile std::sig_atomic_t g_interrupt_signal = 0;
struct sigaction g_previous[2];  // SIGINT, SIGTERM; written only while handlers are not ours

extern "C" void record_interrupt(int sig) {
  if (g_interrupt_signal == 0) g_interrupt_signal = sig;
  const struct sigaction& prev = g_previous[sig == SIGINT ? 0 : 1];
  if ((prev.sa_flags & SA_SIGINFO) == 0 && prev.sa_handler != SIG_DFL &&
      prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  }
}

}  // namespace

bool interrupted() { return g_interrupt_signal != 0; }
int interrupt_signal() { return g_interrupt_signal; }

InterruptHandlers::InterruptHandlers() {
  g_interrupt_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = record_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked poll() returns EINTR and the loop sees the flag
  sigaction(SIGINT, &sa, &g_previous[0]);
  sigaction(SIGTERM, &sa, &g_previous[1]);
}

InterruptHandlers::~InterruptHandlers() {
  sigaction(SIGINT, &g_previous[0], nullptr);
  sigaction(SIGTERM, &g_previous[1], nullptr);
}

}  // namespace dcp
