// Process plumbing for the supervisor and the MPS controller: spawning with a
// prepared environment, bounded waits, and finding a program on PATH. Every wait
// here has a deadline.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dcp {

// The current environment with `unset` names removed and `set` pairs applied.
std::vector<std::string> make_environment(
    const std::vector<std::pair<std::string, std::string>>& set,
    const std::vector<std::string>& unset);

struct SpawnOptions {
  bool die_with_parent = false;  // PR_SET_PDEATHSIG(SIGKILL) in the child
  bool ignore_sigint = false;    // the supervisor alone handles Ctrl-C
  int stdin_fd = -1;             // dup2'ed onto stdin when >= 0
  bool null_stdio = false;       // stdout/stderr to /dev/null (daemons)
  // setpgid(0, 0) in the child: it and what it starts (a worker under
  // compute-sanitizer) are signalled together with kill(-pid, sig).
  bool own_process_group = false;
};

// fork + execve. Everything the child needs is built before fork (the child
// only calls async-signal-safe functions). Throws HarnessError if fork fails;
// an exec failure shows as exit status 127.
pid_t spawn_process(const std::string& path, const std::vector<std::string>& argv,
                    const std::vector<std::string>& env, const SpawnOptions& options);

// How a child ended, as waitpid reported it.
struct ExitInfo {
  bool signaled = false;
  int code = 0;                  // exit status, or the signal number when signaled
  std::string describe() const;  // "exited with status 3", "killed by signal 9 (SIGKILL)"
};

// Non-blocking: the exit info if the child has ended (it is then reaped).
std::optional<ExitInfo> try_reap(pid_t pid);
// Waits up to timeout_s; nullopt if still running.
std::optional<ExitInfo> wait_for_exit(pid_t pid, double timeout_s);
// SIGTERM, then SIGKILL after grace_s; always reaps (bounded by a further 5 s).
std::optional<ExitInfo> terminate_process(pid_t pid, double grace_s);

// The absolute path of `name` on $PATH, or nullopt.
std::optional<std::string> find_on_path(const std::string& name);

std::string signal_name(int sig);  // "SIGSEGV"

}  // namespace dcp
