// Ctrl-C and SIGTERM while a Session is alive: the handler records the signal
// (and chains to a handler the command installed before, e.g. InterruptGuard);
// the supervisor's loops check it, tear every worker down and return a kError
// for the case in progress. The command then writes its partial reports and
// exits (128 + signal). Workers ignore SIGINT: only the supervisor acts on it.
#pragma once

namespace dcp {

bool interrupted();      // a SIGINT or SIGTERM arrived since the last Session started
int interrupt_signal();  // which one (0 if none)

// Installs the handlers for its lifetime and restores the previous ones after.
// One at a time per process (a Session owns one).
class InterruptHandlers {
 public:
  InterruptHandlers();
  ~InterruptHandlers();
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;
};

}  // namespace dcp
