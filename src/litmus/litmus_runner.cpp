#include "litmus_runner.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "errors.h"
#include "hex.h"

extern char** environ;

namespace dcp {
namespace {

#define LITMUS_CHECK(call) CUDA_CHECK(0, HarnessError, call)

constexpr int kRoleTables = 8;                  // one-shot role draws reused at random
constexpr int kCounterInstances = 8192;         // counter tests: 32 blocks per role
constexpr uint32_t kCounterRounds = 2048;
constexpr uint32_t kCounterMaxSamples = kCounterRounds * 64;
constexpr uint64_t kCounterWaitNs = 5'000'000'000ull;  // each side waits for the other
constexpr int kPeerTimeoutMs = 60'000;

template <typename T>
T* device_alloc(size_t count) {
  void* p = nullptr;
  LITMUS_CHECK(cudaMalloc(&p, count * sizeof(T)));
  LITMUS_CHECK(cudaMemset(p, 0, count * sizeof(T)));
  return static_cast<T*>(p);
}

template <typename T>
void upload(T* dst, const std::vector<T>& src) {
  LITMUS_CHECK(cudaMemcpy(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// A counter launch of either side over kCounterInstances instances (the
// reader adds max_samples and counts).
CounterLaunch counter_launch(LitmusOrder order, const uint32_t* slots, uint32_t* mem,
                             uint32_t* words) {
  CounterLaunch l;
  l.order = order;
  l.instances = kCounterInstances;
  l.rounds = kCounterRounds;
  l.wait_ns = kCounterWaitNs;
  l.slots = slots;
  l.mem = mem;
  l.words = words;
  return l;
}

uint32_t* scratch_or_null(const LitmusStress& s, uint32_t* scratch) {
  return s.pattern == StressPattern::kNone ? nullptr : scratch;
}

// Waits for `pid` at most timeout_ms (then kills it); its exit status, or -1.
int wait_child(pid_t pid, int timeout_ms) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, timeout_ms);
    close(fd);
    if (ready == 0) kill(pid, SIGKILL);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string self_exe() {
  std::array<char, 4096> buf{};
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) DCP_THROW(HarnessError, "litmus: cannot resolve /proc/self/exe");
  return std::string(buf.data(), static_cast<size_t>(n));
}

// The peer's command line, in order (litmus_peer_main reads it back).
std::vector<std::string> peer_args(const cudaIpcMemHandle_t& handle, const LitmusTest& test,
                                   const LitmusStress& stress, uint64_t seed, int device) {
  return {self_exe(),
          "__litmus-peer",
          hex_encode(&handle, sizeof handle),
          std::to_string(static_cast<int>(test.order)),
          std::to_string(static_cast<int>(stress.pattern)),
          std::to_string(stress.blocks),
          std::to_string(stress.scratch_words),
          std::to_string(stress.stride_words),
          std::to_string(stress.max_iterations),
          std::to_string(seed),
          std::to_string(device)};
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    DCP_THROW(HarnessError, "litmus: cannot start the peer process {}", args[0]);
  }
  return pid;
}

}  // namespace

struct LitmusRunner::Buffers {
  int instances = 0;  // one-shot instances per launch
  uint32_t* roles[kRoleTables] = {};
  uint32_t* locations = nullptr;
  uint32_t* results = nullptr;
  uint32_t* words = nullptr;
  uint32_t* scratch = nullptr;  // the largest region of the sweep
  uint32_t* counter_slots[2] = {};
  unsigned long long* counts = nullptr;
  cudaStream_t streams[2] = {};
};

LitmusRunner::LitmusRunner(int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    throw UsageError("litmus needs a CUDA GPU and none is visible");
  }
  if (device < 0 || device >= count) {
    DCP_THROW(UsageError, "--device {}: this machine has {} CUDA device(s)", device, count);
  }
  LITMUS_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  LITMUS_CHECK(cudaGetDeviceProperties(&prop, device));
  info_ = {device, prop.name, prop.multiProcessorCount};
  b_ = new Buffers;
  // As many instances as one 256-thread block per SM per role: every test
  // thread can be resident at once beside a stress block per SM.
  b_->instances = info_.sms * kLitmusThreads;
  const size_t threads = 2 * static_cast<size_t>(b_->instances);
  std::mt19937_64 rng(0x11f3u);
  for (auto& table : b_->roles) {
    table = device_alloc<uint32_t>(threads);
    upload(table, draw_roles(b_->instances, kLitmusThreads, rng));
  }
  b_->locations = device_alloc<uint32_t>(threads * 32);
  b_->results = device_alloc<uint32_t>(threads);
  b_->words = device_alloc<uint32_t>(2);
  b_->scratch = device_alloc<uint32_t>(1u << 20);
  for (auto& s : b_->counter_slots) s = device_alloc<uint32_t>(kCounterInstances);
  b_->counts = device_alloc<unsigned long long>(4);
  for (auto& s : b_->streams) LITMUS_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
}

LitmusRunner::~LitmusRunner() {
  if (b_ == nullptr) return;
  for (auto* t : b_->roles) cudaFree(t);
  for (auto* s : b_->counter_slots) cudaFree(s);
  for (void* p : {static_cast<void*>(b_->locations), static_cast<void*>(b_->results),
                  static_cast<void*>(b_->words), static_cast<void*>(b_->scratch),
                  static_cast<void*>(b_->counts)}) {
    cudaFree(p);
  }
  for (auto s : b_->streams) cudaStreamDestroy(s);
  delete b_;
}

LitmusTally LitmusRunner::run(const LitmusTest& test, const LitmusStress& stress,
                              uint64_t iterations, std::mt19937_64& rng) {
  return test.placement == LitmusPlacement::kBlocks ? run_oneshot(test, stress, iterations, rng)
                                                    : run_counter(test, stress, iterations, rng);
}

LitmusTally LitmusRunner::run_oneshot(const LitmusTest& test, const LitmusStress& stress,
                                      uint64_t iterations, std::mt19937_64& rng) {
  const int n = b_->instances;
  const size_t threads = 2 * static_cast<size_t>(n);
  std::vector<uint32_t> results(threads);
  LitmusTally tally;
  std::uniform_int_distribution<int> pick(0, kRoleTables - 1);
  cudaStream_t s = b_->streams[0];
  while (tally.iterations < iterations) {
    LITMUS_CHECK(cudaMemsetAsync(b_->locations, 0, threads * 32 * sizeof(uint32_t), s));
    LITMUS_CHECK(cudaMemsetAsync(b_->words, 0, 2 * sizeof(uint32_t), s));
    LITMUS_CHECK(launch_litmus_oneshot(test.shape, test.order, test.system_scope, n,
                                       b_->roles[pick(rng)], b_->locations, b_->results,
                                       b_->words, stress, scratch_or_null(stress, b_->scratch),
                                       s));
    LITMUS_CHECK(cudaMemcpyAsync(results.data(), b_->results, threads * sizeof(uint32_t),
                                 cudaMemcpyDeviceToHost, s));
    LITMUS_CHECK(cudaStreamSynchronize(s));
    tally_oneshot(test.shape, results, tally);
  }
  return tally;
}

LitmusTally LitmusRunner::run_counter(const LitmusTest& test, const LitmusStress& stress,
                                      uint64_t iterations, std::mt19937_64& rng) {
  LitmusTally tally;
  const uint64_t mem_words = counter_mem_words(kCounterInstances);
  uint32_t* scratch = scratch_or_null(stress, b_->scratch);
  for (int pair = 0; pair < 8 && tally.iterations < iterations; ++pair) {
    uint32_t* mem = device_alloc<uint32_t>(mem_words);  // its own allocation: IPC maps it whole
    uint32_t* words = device_alloc<uint32_t>(4);        // [0..1] reader, [2..3] writer
    upload(b_->counter_slots[0], draw_permutation(kCounterInstances, rng));
    LITMUS_CHECK(cudaMemset(b_->counts, 0, 4 * sizeof(unsigned long long)));
    CounterLaunch reader = counter_launch(test.order, b_->counter_slots[0], mem, words);
    reader.max_samples = kCounterMaxSamples;
    reader.counts = b_->counts;
    pid_t peer = -1;
    if (test.placement == LitmusPlacement::kProcesses) {
      cudaIpcMemHandle_t handle{};
      LITMUS_CHECK(cudaIpcGetMemHandle(&handle, mem));
      peer = spawn(peer_args(handle, test, stress, rng(), info_.device));
    }
    LITMUS_CHECK(launch_counter_reader(reader, stress, scratch, b_->streams[0]));
    if (peer < 0) {  // streams: the writer is a second kernel of this process
      upload(b_->counter_slots[1], draw_permutation(kCounterInstances, rng));
      const CounterLaunch writer =
          counter_launch(test.order, b_->counter_slots[1], mem, words + 2);
      LITMUS_CHECK(launch_counter_writer(writer, stress, scratch, b_->streams[1]));
    }
    LITMUS_CHECK(cudaDeviceSynchronize());
    unsigned long long counts[4] = {};
    LITMUS_CHECK(cudaMemcpy(counts, b_->counts, sizeof counts, cudaMemcpyDeviceToHost));
    uint32_t control[3] = {};
    LITMUS_CHECK(cudaMemcpy(control, mem + 2 * kCounterInstances * 32, sizeof control,
                            cudaMemcpyDeviceToHost));
    cudaFree(mem);
    cudaFree(words);
    if (peer >= 0) {
      const int rc = wait_child(peer, kPeerTimeoutMs);
      if (rc != 0) DCP_THROW(HarnessError, "litmus: the writer process failed (exit {})", rc);
    }
    if (control[1] != static_cast<uint32_t>(kCounterInstances)) {
      DCP_THROW(HarnessError,
                "litmus: {} of {} writer threads finished ({}): the two sides never overlapped",
                control[1], kCounterInstances, litmus_test_name(test));
    }
    tally_counter(counts, tally);
  }
  return tally;
}

int litmus_peer_main(int argc, char** argv) {
  try {
    if (argc != 11) throw UsageError("__litmus-peer: expects 9 arguments");
    cudaIpcMemHandle_t handle{};
    if (!hex_decode(argv[2], &handle, sizeof handle)) throw UsageError("__litmus-peer: bad handle");
    auto num = [&](int k) { return std::stoull(argv[k]); };
    LitmusStress stress;
    stress.pattern = static_cast<StressPattern>(num(4));
    stress.blocks = static_cast<int>(num(5));
    stress.scratch_words = static_cast<uint32_t>(num(6));
    stress.stride_words = static_cast<uint32_t>(num(7));
    stress.max_iterations = static_cast<uint32_t>(num(8));
    std::mt19937_64 rng(num(9));
    LITMUS_CHECK(cudaSetDevice(static_cast<int>(num(10))));
    void* mem = nullptr;
    LITMUS_CHECK(cudaIpcOpenMemHandle(&mem, handle, cudaIpcMemLazyEnablePeerAccess));
    uint32_t* slots = device_alloc<uint32_t>(kCounterInstances);
    upload(slots, draw_permutation(kCounterInstances, rng));
    uint32_t* words = device_alloc<uint32_t>(2);
    uint32_t* scratch = stress.pattern == StressPattern::kNone
                            ? nullptr
                            : device_alloc<uint32_t>(stress.scratch_words);
    const CounterLaunch writer = counter_launch(static_cast<LitmusOrder>(num(3)), slots,
                                                static_cast<uint32_t*>(mem), words);
    LITMUS_CHECK(launch_counter_writer(writer, stress, scratch, nullptr));
    LITMUS_CHECK(cudaDeviceSynchronize());
    LITMUS_CHECK(cudaIpcCloseMemHandle(mem));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dcp-check __litmus-peer: %s\n", e.what());
    return 3;
  }
}

}  // namespace dcp
