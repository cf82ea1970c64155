#include "mps.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "errors.h"
#include "supervisor_process.h"

namespace dcp {
namespace {

constexpr const char* kControlBinary = "nvidia-cuda-mps-control";
constexpr const char* kDefaultPipeDir = "/tmp/nvidia-mps";

bool control_pipe_exists(const std::string& pipe_dir) {
  struct stat st {};
  return !pipe_dir.empty() && stat((pipe_dir + "/control").c_str(), &st) == 0;
}

std::string user_pipe_dir() {
  const char* env = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  return env != nullptr && *env != '\0' ? env : kDefaultPipeDir;
}

// Processes of ours whose environment names this pipe directory: the private
// control daemon and the server it started (both inherit the variable).
std::vector<pid_t> processes_with_pipe_dir(const std::string& pipe_dir) {
  std::vector<pid_t> pids;
  const std::string needle = "CUDA_MPS_PIPE_DIRECTORY=" + pipe_dir;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid == getpid()) continue;
    std::ifstream in(fmt::format("/proc/{}/environ", pid), std::ios::binary);
    if (!in) continue;
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t pos = 0;
    while (pos < env.size()) {
      size_t stop = env.find('\0', pos);
      if (stop == std::string::npos) stop = env.size();
      if (env.compare(pos, stop - pos, needle) == 0) {
        pids.push_back(static_cast<pid_t>(pid));
        break;
      }
      pos = stop + 1;
    }
  }
  closedir(proc);
  return pids;
}

}  // namespace

std::string mps_thread_percentage(int ranks_per_gpu) {
  const int hundredths = std::max(1000, 10000 / std::max(1, ranks_per_gpu));  // floored
  if (hundredths % 100 == 0) return std::to_string(hundredths / 100);
  if (hundredths % 10 == 0) return fmt::format("{}.{}", hundredths / 100, hundredths / 10 % 10);
  return fmt::format("{}.{:02}", hundredths / 100, hundredths % 100);
}

MpsController::MpsController(MpsMode mode, bool gpu_backend, int world, int num_gpus,
                             const std::string& run_dir) {
  if (!gpu_backend) {
    description_ = "off (host backend)";
    return;
  }
  const int ranks_per_gpu = (world + std::max(1, num_gpus) - 1) / std::max(1, num_gpus);
  const bool shared = ranks_per_gpu > 1;
  // DCP_MPS_PERCENT (diagnosis only): the share per rank instead of the
  // guard's, as MPS reads it (e.g. 13, or 12.5); the guard is then the caller's.
  const char* forced = std::getenv("DCP_MPS_PERCENT");
  const std::string pct = forced != nullptr && *forced != '\0'
                              ? std::string(forced)
                              : mps_thread_percentage(ranks_per_gpu);
  switch (mode) {
    case MpsMode::kOff:
      description_ = "off";
      unset_ = {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY",
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"};
      if (control_pipe_exists(kDefaultPipeDir)) {
        // CUDA joins a daemon at the default location on its own; an empty pipe
        // directory makes the connection fail, and CUDA then runs without MPS.
        const std::string empty_dir = run_dir + "/mps-off";
        mkdir(empty_dir.c_str(), 0700);
        set_ = {{"CUDA_MPS_PIPE_DIRECTORY", empty_dir}};
        description_ = "off (a user MPS daemon is running; workers do not join it)";
      }
      return;
    case MpsMode::kAuto:
      if (!shared) {
        description_ = "auto: off (every rank has its own GPU)";
      } else if (control_pipe_exists(user_pipe_dir())) {
        description_ =
            fmt::format("auto: user daemon at {} ({}% of SMs per rank)", user_pipe_dir(), pct);
        set_ = {{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct}};
      } else {
        description_ = "auto: off (no MPS daemon reachable; ranks sharing a GPU time-slice)";
      }
      return;
    case MpsMode::kOn:
      if (!shared) {
        description_ = "on: not started (every rank has its own GPU)";
        return;
      }
      start_private_daemon(run_dir, pct);
      description_ = fmt::format("on: private daemon ({}% of SMs per rank)", pct);
      return;
  }
}

void MpsController::start_private_daemon(const std::string& run_dir, const std::string& percentage) {
  auto binary = find_on_path(kControlBinary);
  DCP_CHECK(binary.has_value(), UsageError,
            "--mps on: {} is not on PATH; install the NVIDIA MPS tools or use --mps auto|off",
            kControlBinary);
  control_binary_ = *binary;
  const std::string pipe_dir = run_dir + "/mps-pipe";
  log_dir_ = run_dir + "/mps-log";
  DCP_CHECK(mkdir(pipe_dir.c_str(), 0700) == 0 && mkdir(log_dir_.c_str(), 0700) == 0, HarnessError,
            "cannot create MPS directories in {}: {}", run_dir, std::strerror(errno));
  pipe_dir_ = pipe_dir;  // from here on stop() cleans up, whatever happens next
  const auto env = make_environment(
      {{"CUDA_MPS_PIPE_DIRECTORY", pipe_dir_}, {"CUDA_MPS_LOG_DIRECTORY", log_dir_}}, {});
  SpawnOptions opts;
  opts.null_stdio = true;
  opts.ignore_sigint = true;  // Ctrl-C is the supervisor's to handle; it quits the daemon
  const pid_t launcher = spawn_process(control_binary_, {control_binary_, "-d"}, env, opts);
  auto exit = wait_for_exit(launcher, 10.0);
  if (!exit) terminate_process(launcher, 1.0);
  DCP_CHECK(exit && !exit->signaled && exit->code == 0, UsageError,
            "--mps on: `{} -d` failed ({}); see {}", control_binary_,
            exit ? exit->describe() : "no answer in 10 s", log_dir_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!control_pipe_exists(pipe_dir_)) {
    DCP_CHECK(std::chrono::steady_clock::now() < deadline, UsageError,
              "--mps on: the MPS control daemon did not come up within 10 s; see {}", log_dir_);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  set_ = {{"CUDA_MPS_PIPE_DIRECTORY", pipe_dir_},
          {"CUDA_MPS_LOG_DIRECTORY", log_dir_},
          {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", percentage}};
}

MpsController::~MpsController() { stop(); }

void MpsController::stop() {
  if (pipe_dir_.empty()) return;
  const std::string pipe_dir = std::exchange(pipe_dir_, std::string());
  try {
    int fds[2];
    // Close-on-exec: the quitter must not inherit the write end, or it never
    // sees end of input and lingers until the kill below (5 s per run).
    if (pipe2(fds, O_CLOEXEC) == 0) {
      const auto env = make_environment(
          {{"CUDA_MPS_PIPE_DIRECTORY", pipe_dir}, {"CUDA_MPS_LOG_DIRECTORY", log_dir_}}, {});
      SpawnOptions opts;
      opts.stdin_fd = fds[0];
      opts.null_stdio = true;
      const pid_t quitter = spawn_process(control_binary_, {control_binary_}, env, opts);
      close(fds[0]);
      static constexpr char kQuit[] = "quit\n";
      [[maybe_unused]] ssize_t n = write(fds[1], kQuit, sizeof(kQuit) - 1);
      close(fds[1]);
      if (!wait_for_exit(quitter, 5.0)) terminate_process(quitter, 0.5);
    }
  } catch (const std::exception&) {
    // Fall through to the kill below: a daemon must never be left behind.
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::vector<pid_t> left = processes_with_pipe_dir(pipe_dir);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = processes_with_pipe_dir(pipe_dir);
  }
  for (pid_t pid : left) kill(pid, SIGKILL);  // started by this run: its pipe dir is private
}

}  // namespace dcp
