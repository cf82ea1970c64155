#include "command_lifecycle.h"

#include "errors.h"
#include "exit_code.h"

namespace dcp {

CommandLifecycle::CommandLifecycle(int verbosity)
    : CommandLifecycle(stdout, detect_terminal_style(verbosity)) {}

CommandLifecycle::CommandLifecycle(std::FILE* out, TerminalStyle style) : term_(out, style) {}

double CommandLifecycle::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

Outcome CommandLifecycle::outcome(int exit_code, bool aborted) const {
  Outcome o;
  o.exit_code = exit_code;
  o.wall_s = elapsed_s();
  o.interrupted_by = interrupted();
  o.aborted = aborted;
  return o;
}

void CommandLifecycle::finish(CommandBody& body, const Outcome& o) {
  body.record(o);
  if (!o.aborted || o.exit_code != kExitUsage) body.summary(term_, o);
  write_report_files(body.report_files());
}

int CommandLifecycle::execute(CommandBody& body) {
  try {
    body.run(*this);
  } catch (const std::exception& e) {
    // The exit code main will give this exception, so the reports agree with it.
    const Outcome o = outcome(exit_code(findings_of(e)), /*aborted=*/true);
    try {
      body.abandon(e);
      finish(body, o);
    } catch (const std::exception& secondary) {
      std::fprintf(stderr, "dcp-check: warning: %s\n", secondary.what());
    }
    throw;
  }
  const Outcome o = outcome(body.exit_code(interrupted()), /*aborted=*/false);
  finish(body, o);
  return o.exit_code;
}

}  // namespace dcp
