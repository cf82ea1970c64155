// MPS control against a stand-in nvidia-cuda-mps-control (a shell script that
// "daemonizes" a sleep carrying CUDA_MPS_PIPE_DIRECTORY, like the real daemon
// and its server): the private daemon starts with its own pipe and log
// directories, workers get the starvation guard, and stop() leaves no daemon
// behind even when it ignores `quit`.
#include "mps.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "errors.h"

namespace dcp {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFakeControl = R"SH(#!/bin/sh
if [ "$1" = "-d" ]; then
  [ -d "$CUDA_MPS_PIPE_DIRECTORY" ] && [ -d "$CUDA_MPS_LOG_DIRECTORY" ] || exit 3
  sleep 300 </dev/null >/dev/null 2>&1 &
  echo $! > "$CUDA_MPS_PIPE_DIRECTORY/daemon.pid"
  : > "$CUDA_MPS_PIPE_DIRECTORY/control"
  exit 0
fi
# Like the real client: commands until end of input, then exit.
while read cmd; do
  if [ "$cmd" = quit ] && [ "$FAKE_MPS_IGNORE_QUIT" != 1 ]; then
    kill "$(cat "$CUDA_MPS_PIPE_DIRECTORY/daemon.pid")"
  fi
done
: > "$CUDA_MPS_PIPE_DIRECTORY/quitter-saw-eof"
exit 0
)SH";

// Sets an environment variable for one scope (tests only).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/dcp-check-mps-test.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

std::string env_value(const MpsController& mps, const std::string& name) {
  for (const auto& [k, v] : mps.worker_env()) {
    if (k == name) return v;
  }
  return "";
}

TEST_CASE("the starvation guard gives each rank a bounded share of the GPU") {
  CHECK(mps_thread_percentage(1) == "100");
  CHECK(mps_thread_percentage(2) == "50");
  CHECK(mps_thread_percentage(3) == "33.33");
  CHECK(mps_thread_percentage(4) == "25");
  CHECK(mps_thread_percentage(6) == "16.66");
  CHECK(mps_thread_percentage(7) == "14.28");
  CHECK(mps_thread_percentage(8) == "12.5");
  CHECK(mps_thread_percentage(16) == "10");
}

TEST_CASE("--mps on starts a private daemon for shared GPUs and stops it") {
  TempDir bin, run;
  const fs::path script = bin.path / "nvidia-cuda-mps-control";
  std::ofstream(script) << kFakeControl;
  fs::permissions(script, fs::perms::owner_all);
  ScopedEnv path("PATH", bin.path.string() + ":" + std::getenv("PATH"));

  SUBCASE("quit stops it") {
    MpsController mps(MpsMode::kOn, /*gpu_backend=*/true, /*world=*/4, /*num_gpus=*/1,
                      run.path.string());
    CHECK(mps.description().find("on: private daemon") == 0);
    const std::string pipe_dir = env_value(mps, "CUDA_MPS_PIPE_DIRECTORY");
    CHECK(pipe_dir == (run.path / "mps-pipe").string());
    CHECK(env_value(mps, "CUDA_MPS_LOG_DIRECTORY") == (run.path / "mps-log").string());
    CHECK(env_value(mps, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") == "25");
    pid_t daemon = 0;
    std::ifstream(pipe_dir + "/daemon.pid") >> daemon;
    REQUIRE(daemon > 0);
    CHECK_FALSE(process_gone(daemon));
    mps.stop();
    for (int i = 0; i < 100 && !process_gone(daemon); ++i) usleep(10000);
    CHECK(process_gone(daemon));
    // The quitter ended on end of input, not killed after its deadline: it
    // did not inherit the write end of its own stdin pipe.
    CHECK(fs::exists(pipe_dir + "/quitter-saw-eof"));
  }
  SUBCASE("a daemon that ignores quit is killed") {
    ScopedEnv stubborn("FAKE_MPS_IGNORE_QUIT", "1");
    pid_t daemon = 0;
    {
      MpsController mps(MpsMode::kOn, true, 2, 1, run.path.string());
      std::ifstream(run.path / "mps-pipe" / "daemon.pid") >> daemon;
      REQUIRE(daemon > 0);
    }  // the destructor stops it
    for (int i = 0; i < 100 && !process_gone(daemon); ++i) usleep(10000);
    CHECK(process_gone(daemon));
  }
  SUBCASE("every rank on its own GPU: no daemon") {
    MpsController mps(MpsMode::kOn, true, 2, 2, run.path.string());
    CHECK(mps.description().find("not started") != std::string::npos);
    CHECK(mps.worker_env().empty());
    CHECK_FALSE(fs::exists(run.path / "mps-pipe"));
  }
}

TEST_CASE("--mps on without the MPS tools is a usage error") {
  TempDir empty, run;
  ScopedEnv path("PATH", empty.path.string());
  CHECK_THROWS_AS(MpsController(MpsMode::kOn, true, 4, 1, run.path.string()), UsageError);
}

TEST_CASE("--mps auto joins a reachable user daemon, else time-slices") {
  TempDir user_pipe, run;
  {
    ScopedEnv pipe("CUDA_MPS_PIPE_DIRECTORY", (user_pipe.path / "absent").string());
    MpsController mps(MpsMode::kAuto, true, 4, 1, run.path.string());
    CHECK(mps.description().find("time-slice") != std::string::npos);
    CHECK(mps.worker_env().empty());
  }
  std::ofstream(user_pipe.path / "control") << "";
  ScopedEnv pipe("CUDA_MPS_PIPE_DIRECTORY", user_pipe.path.string());
  MpsController mps(MpsMode::kAuto, true, 4, 1, run.path.string());
  CHECK(mps.description().find("user daemon") != std::string::npos);
  CHECK(env_value(mps, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") == "25");
}

TEST_CASE("--mps off removes CUDA_MPS_* from the workers, and the host backend never uses MPS") {
  TempDir run;
  MpsController off(MpsMode::kOff, true, 4, 1, run.path.string());
  CHECK(off.description().find("off") == 0);
  const auto& unset = off.worker_unset();
  CHECK(std::find(unset.begin(), unset.end(), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") != unset.end());
  MpsController host(MpsMode::kOn, /*gpu_backend=*/false, 4, 0, run.path.string());
  CHECK(host.description() == "off (host backend)");
  CHECK(host.worker_env().empty());
}

}  // namespace
}  // namespace dcp
