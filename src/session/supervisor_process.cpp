#include "supervisor_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "errors.h"

extern char** environ;

namespace dcp {

std::vector<std::string> make_environment(
    const std::vector<std::pair<std::string, std::string>>& set,
    const std::vector<std::string>& unset) {
  std::vector<std::string> env;
  auto replaced = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    for (const auto& u : unset) {
      if (u == name) return true;
    }
    for (const auto& [k, v] : set) {
      if (k == name) return true;
    }
    return false;
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!replaced(*e)) env.emplace_back(*e);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

pid_t spawn_process(const std::string& path, const std::vector<std::string>& argv,
                    const std::vector<std::string>& env, const SpawnOptions& options) {
  std::vector<char*> c_argv, c_env;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  for (const auto& e : env) c_env.push_back(const_cast<char*>(e.c_str()));
  c_env.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  DCP_CHECK(pid >= 0, HarnessError, "fork: {}", std::strerror(errno));
  if (pid > 0) return pid;
  // Child: async-signal-safe calls only.
  if (options.die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  }
  if (options.own_process_group) setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGINT, options.ignore_sigint ? SIG_IGN : SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  if (options.stdin_fd >= 0) dup2(options.stdin_fd, STDIN_FILENO);
  if (options.null_stdio) {
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      if (options.stdin_fd < 0) dup2(null_fd, STDIN_FILENO);
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
    }
  }
  execve(path.c_str(), c_argv.data(), c_env.data());
  _exit(127);
}

std::string ExitInfo::describe() const {
  if (signaled) return fmt::format("killed by signal {} ({})", code, signal_name(code));
  return fmt::format("exited with status {}", code);
}

std::optional<ExitInfo> try_reap(pid_t pid) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r != pid) {
    if (r < 0 && errno == ECHILD) return ExitInfo{false, -1};  // already reaped elsewhere
    return std::nullopt;
  }
  ExitInfo info;
  if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.code = WTERMSIG(status);
  } else {
    info.code = WEXITSTATUS(status);
  }
  return info;
}

std::optional<ExitInfo> wait_for_exit(pid_t pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (true) {
    if (auto info = try_reap(pid)) return info;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<ExitInfo> terminate_process(pid_t pid, double grace_s) {
  if (auto info = try_reap(pid)) return info;
  kill(pid, SIGTERM);
  if (auto info = wait_for_exit(pid, grace_s)) return info;
  kill(pid, SIGKILL);
  return wait_for_exit(pid, 5.0);
}

std::optional<std::string> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

}  // namespace dcp
