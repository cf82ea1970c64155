#include "launch_observer.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "futex.h"
#include "launch_diagnosis.h"

namespace dcp::launch_observer {
namespace {

// CUDA 13's <<<>>> entry point (crt/device_functions.h, __cudaLaunchKernel):
// CUPTI hands its arguments over in this order. A cudaKernel_t is a CUkernel.
struct LaunchKernelV13Params {
  cudaKernel_t kernel;
  dim3 grid;
  dim3 block;
  void** args;
  size_t shared_mem;
  cudaStream_t stream;
};

template <typename F>
bool resolve(void* lib, const char* name, F*& fn) {
  fn = reinterpret_cast<F*>(dlsym(lib, name));
  return fn != nullptr;
}

template <typename F>
bool driver_fn(const char* name, F*& fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    return false;
  }
  fn = reinterpret_cast<F*>(p);
  return true;
}

struct Api {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuEventCreate) event_create = nullptr;
  decltype(&cuEventRecord) event_record = nullptr;
  decltype(&cuEventQuery) event_query = nullptr;
  decltype(&cuKernelGetFunction) kernel_get_function = nullptr;
  decltype(&cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy = nullptr;
  decltype(&cuStreamIsCapturing) stream_is_capturing = nullptr;
  decltype(&cuCtxGetExecAffinity) ctx_exec_affinity = nullptr;
  decltype(&cuCtxGetDevice) ctx_get_device = nullptr;
  decltype(&cuDeviceGetAttribute) device_attribute = nullptr;
  decltype(&cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&cuStreamCreate) stream_create = nullptr;
  decltype(&cuMemcpyDtoHAsync) memcpy_dtoh_async = nullptr;
  decltype(&cuStreamQuery) stream_query = nullptr;
  decltype(&cuMemAllocHost) mem_alloc_host = nullptr;
};

struct FuncInfo {
  std::string name;  // short_kernel_name of the demangled symbol
  int blocks_per_sm = -1;
  bool tried = false;  // the occupancy was asked for once (outside a capture)
};

struct DumpRegion {
  const void* owner;
  ControlDump meta;  // name, group, context, bytes, local
  CUdeviceptr ptr;
};

struct Launch {
  const void* key = nullptr;  // CUkernel, CUfunction, or a runtime stub
  CUfunction function = nullptr;
  CUkernel kernel = nullptr;
  const char* symbol = nullptr;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t shared = 0;
  CUstream stream = nullptr;
  bool graph = false;
};

struct State {
  Api api;
  void* cupti_lib = nullptr;
  CUpti_SubscriberHandle subscriber = nullptr;
  LaunchTable* table = nullptr;
  const volatile uint32_t* in_kernel = nullptr;
  std::atomic<bool> on{false};
  std::atomic<bool> stopping{false};
  std::atomic<int> case_index{-1};
  std::atomic<int> pressure_sms{0};
  std::thread server;
  std::mutex mutex;  // everything below
  CUcontext context = nullptr;
  std::map<const void*, FuncInfo> funcs;
  std::map<const void*, std::pair<uint32_t, std::string>> streams;  // ordinal, label
  std::array<CUevent, kLaunchRing> events{};
  std::array<uint64_t, kLaunchRing> event_seq{};
  std::set<std::string> warned;
  std::vector<DumpRegion> regions;
  uint8_t* dump_host = nullptr;  // pinned, kMaxControlDumps * kControlDumpBytes
  CUstream dump_stream = nullptr;
};

State& state() {
  static State* s = new State();  // never destroyed: callbacks may outlive statics
  return *s;
}

thread_local int t_op = -1, t_slot = -1, t_dcp = 0;
thread_local int t_runtime_depth = 0;  // inside a runtime launch: its driver calls are not new launches
// The CUfunction a runtime launch handed to the driver, when the driver's
// launch callback fired inside it (a runtime host stub names no function).
thread_local CUfunction t_inner_function = nullptr;
thread_local bool t_busy = false;      // our own driver calls inside a callback

void copy_text(char* dst, size_t capacity, const std::string& text) {
  const size_t n = std::min(capacity - 1, text.size());
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

std::string demangled(const char* symbol) {
  if (symbol == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : symbol;
  std::free(d);
  return short_kernel_name(out);
}

// The table's SM counts, once there is a context.
void learn_sms(State& s) {
  LaunchTable& t = *s.table;
  if (t.device_sms > 0) return;
  CUdevice dev = 0;
  int sms = 0;
  if (s.api.ctx_get_device(&dev) == CUDA_SUCCESS) {
    s.api.device_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  }
  CUexecAffinityParam aff{};
  const bool share =
      s.api.ctx_exec_affinity(&aff, CU_EXEC_AFFINITY_TYPE_SM_COUNT) == CUDA_SUCCESS &&
      aff.param.smCount.val > 0;
  t.rank_sms = share ? static_cast<int32_t>(aff.param.smCount.val) : sms;
  t.device_sms = sms;
}

FuncInfo& func_info(State& s, const Launch& l, bool capturing) {
  FuncInfo& f = s.funcs[l.key];
  if (f.name.empty()) f.name = l.graph ? "CUDA graph replay" : demangled(l.symbol);
  if (!f.tried && !capturing && !l.graph) {
    f.tried = true;
    CUfunction fn = l.function;
    if (fn == nullptr && l.kernel != nullptr &&
        s.api.kernel_get_function(&fn, l.kernel) != CUDA_SUCCESS) {
      fn = nullptr;
    }
    // A host stub this process's own runtime registered (dcp-check's kernels);
    // a plugin's statically linked runtime keeps its stubs to itself.
    cudaFunction_t own = nullptr;
    if (fn == nullptr && l.key != nullptr && cudaGetFuncBySymbol(&own, l.key) == cudaSuccess) {
      fn = reinterpret_cast<CUfunction>(own);
    }
    if (fn == nullptr) cudaGetLastError();  // the failed lookup is not the caller's error
    int n = 0;
    const int threads = static_cast<int>(l.block[0] * l.block[1] * l.block[2]);
    if (fn != nullptr && s.api.occupancy(&n, fn, threads, l.shared) == CUDA_SUCCESS) {
      f.blocks_per_sm = n;
    }
  }
  return f;
}

void record(State& s, const Launch& l, CUcontext ctx) {
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.context == nullptr) s.context = ctx;
  learn_sms(s);
  LaunchTable& t = *s.table;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (s.api.stream_is_capturing(l.stream, &capture) != CUDA_SUCCESS) {
    capture = CU_STREAM_CAPTURE_STATUS_NONE;
  }
  const bool capturing = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  const FuncInfo& f = func_info(s, l, capturing);
  auto [it, added] = s.streams.try_emplace(l.stream, static_cast<uint32_t>(s.streams.size()), "");
  const uint64_t seq = t.next_seq.load(std::memory_order_relaxed) + 1;
  const size_t idx = (seq - 1) % kLaunchRing;
  LaunchRecord& r = t.ring[idx];
  r.seq = 0;  // invalid while written
  r.case_index = s.case_index.load(std::memory_order_relaxed);
  r.op_idx = t_op;
  r.slot = t_slot;
  r.dcp_size = t_dcp;
  r.stream_ordinal = it->second.first;
  r.origin = l.graph                                             ? LaunchOrigin::kGraph
             : (s.in_kernel != nullptr && *s.in_kernel != 0) ? LaunchOrigin::kKernel
                                                             : LaunchOrigin::kHarness;
  r.state = capturing ? LaunchState::kCaptured : LaunchState::kLaunched;
  std::copy(l.grid, l.grid + 3, r.grid);
  std::copy(l.block, l.block + 3, r.block);
  r.dyn_smem_bytes = l.shared;
  r.blocks_per_sm = f.blocks_per_sm;
  r.usable_sms = std::max(1, t.rank_sms - s.pressure_sms.load(std::memory_order_relaxed));
  r.launched_ns = monotonic_ns();
  r.completed_ns = 0;
  copy_text(r.name, sizeof r.name, f.name);
  copy_text(r.stream_label, sizeof r.stream_label, it->second.second);
  if (!capturing) {
    CUevent& e = s.events[idx];
    if (e == nullptr && s.api.event_create(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) e = nullptr;
    s.event_seq[idx] = e != nullptr && s.api.event_record(e, l.stream) == CUDA_SUCCESS ? seq : 0;
  }
  std::atomic_thread_fence(std::memory_order_release);
  r.seq = seq;
  t.next_seq.store(seq, std::memory_order_release);
  // The first launch of each shape whose grid cannot be resident at once.
  if (r.origin != LaunchOrigin::kKernel || r.blocks_per_sm < 0) return;
  const std::string key = fmt::format("{}/{}x{}x{}/{}/{}", f.name, l.grid[0], l.grid[1], l.grid[2],
                                      r.block[0] * r.block[1] * r.block[2], l.shared);
  if (!s.warned.insert(key).second) return;
  const std::string w = residency_warning(r, t.rank_sms);
  const uint32_t n = t.num_warnings.load(std::memory_order_relaxed);
  if (w.empty() || n >= kMaxResidencyWarnings) return;
  copy_text(t.warnings[n], kWarningBytes, w);
  t.num_warnings.store(n + 1, std::memory_order_release);
}

void dim(const dim3& d, uint32_t out[3]) {
  out[0] = d.x;
  out[1] = d.y;
  out[2] = d.z;
}

bool from_runtime(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, Launch& l) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
      const auto* p = static_cast<const LaunchKernelV13Params*>(cb->functionParams);
      l.key = p->kernel;
      l.kernel = reinterpret_cast<CUkernel>(p->kernel);
      dim(p->grid, l.grid);
      dim(p->block, l.block);
      l.shared = static_cast<uint32_t>(p->shared_mem);
      l.stream = reinterpret_cast<CUstream>(p->stream);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      // A host stub of whichever runtime launched it: no occupancy from here.
      const auto* p = static_cast<const cudaLaunchKernel_v7000_params*>(cb->functionParams);
      l.key = p->func;
      dim(p->gridDim, l.grid);
      dim(p->blockDim, l.block);
      l.shared = static_cast<uint32_t>(p->sharedMem);
      l.stream = reinterpret_cast<CUstream>(p->stream);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto* p = static_cast<const cudaLaunchKernelExC_v11060_params*>(cb->functionParams);
      l.key = p->func;
      dim(p->config->gridDim, l.grid);
      dim(p->config->blockDim, l.block);
      l.shared = static_cast<uint32_t>(p->config->dynamicSmemBytes);
      l.stream = reinterpret_cast<CUstream>(p->config->stream);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: {
      const auto* p = static_cast<const cudaGraphLaunch_v10000_params*>(cb->functionParams);
      l.key = p->graphExec;
      l.graph = true;
      l.stream = reinterpret_cast<CUstream>(p->stream);
      return true;
    }
    default:
      return false;
  }
}

bool from_driver(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, Launch& l) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchKernel_params*>(cb->functionParams);
      l.key = p->f;
      l.function = p->f;
      l.grid[0] = p->gridDimX, l.grid[1] = p->gridDimY, l.grid[2] = p->gridDimZ;
      l.block[0] = p->blockDimX, l.block[1] = p->blockDimY, l.block[2] = p->blockDimZ;
      l.shared = p->sharedMemBytes;
      l.stream = p->hStream;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
      l.key = p->f;
      l.function = p->f;
      l.grid[0] = p->config->gridDimX, l.grid[1] = p->config->gridDimY;
      l.grid[2] = p->config->gridDimZ;
      l.block[0] = p->config->blockDimX, l.block[1] = p->config->blockDimY;
      l.block[2] = p->config->blockDimZ;
      l.shared = p->config->sharedMemBytes;
      l.stream = p->config->hStream;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      const auto* p = static_cast<const cuGraphLaunch_params*>(cb->functionParams);
      l.key = p->hGraph;
      l.graph = true;
      l.stream = p->hStream;
      return true;
    }
    default:
      return false;
  }
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  State& s = state();
  if (t_busy || !s.on.load(std::memory_order_relaxed)) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (runtime) t_runtime_depth += cb->callbackSite == CUPTI_API_ENTER ? 1 : -1;
  if (runtime && cb->callbackSite == CUPTI_API_ENTER) t_inner_function = nullptr;
  if (!runtime && t_runtime_depth > 0) {  // the driver half of a runtime launch
    Launch inner;
    if (cb->callbackSite == CUPTI_API_ENTER && from_driver(cbid, cb, inner)) {
      t_inner_function = inner.function;
    }
    return;
  }
  if (cb->callbackSite != CUPTI_API_EXIT) return;
  if (runtime ? *static_cast<const cudaError_t*>(cb->functionReturnValue) != cudaSuccess
              : *static_cast<const CUresult*>(cb->functionReturnValue) != CUDA_SUCCESS) {
    return;  // nothing was launched
  }
  Launch l;
  l.symbol = cb->symbolName;
  if (!(runtime ? from_runtime(cbid, cb, l) : from_driver(cbid, cb, l))) return;
  if (runtime && l.function == nullptr) l.function = t_inner_function;
  t_busy = true;
  record(s, l, cb->context);
  t_busy = false;
}

// Completions and dumps, on a snapshot request (the worker may be stuck in a
// synchronisation: this thread is not).
void snapshot(State& s) {
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.context == nullptr || s.api.ctx_set_current(s.context) != CUDA_SUCCESS) return;
  LaunchTable& t = *s.table;
  const int64_t now = monotonic_ns();
  for (size_t i = 0; i < kLaunchRing; ++i) {
    LaunchRecord& r = t.ring[i];
    if (r.seq == 0 || r.state != LaunchState::kLaunched || s.event_seq[i] != r.seq) continue;
    if (s.api.event_query(s.events[i]) == CUDA_SUCCESS) {
      r.state = LaunchState::kCompleted;
      r.completed_ns = now;
    }
  }
  const int n = std::min<int>(static_cast<int>(s.regions.size()), kMaxControlDumps);
  if (s.dump_stream == nullptr &&
      s.api.stream_create(&s.dump_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    s.dump_stream = nullptr;
  }
  std::vector<int> status(static_cast<size_t>(n), 2);
  for (int i = 0; i < n && s.dump_host != nullptr && s.dump_stream != nullptr; ++i) {
    const DumpRegion& d = s.regions[static_cast<size_t>(i)];
    const size_t bytes = std::min<uint64_t>(d.meta.bytes, kControlDumpBytes);
    if (s.api.memcpy_dtoh_async(s.dump_host + size_t(i) * kControlDumpBytes, d.ptr, bytes,
                                s.dump_stream) == CUDA_SUCCESS) {
      status[static_cast<size_t>(i)] = 1;
    }
  }
  // The copies wait for no kernel (a stream of their own); bounded anyway.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  bool copied = false;
  while (n > 0 && s.dump_stream != nullptr && std::chrono::steady_clock::now() < deadline) {
    if (s.api.stream_query(s.dump_stream) == CUDA_SUCCESS) {
      copied = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (int i = 0; i < n; ++i) {
    ControlDump& c = t.control[i];
    c = s.regions[static_cast<size_t>(i)].meta;
    c.dumped = static_cast<uint32_t>(std::min<uint64_t>(c.bytes, kControlDumpBytes));
    c.status = status[static_cast<size_t>(i)] == 1 ? (copied ? 0 : 1) : 2;
    if (c.status == 0) std::memcpy(c.data, s.dump_host + size_t(i) * kControlDumpBytes, c.dumped);
  }
  t.num_control = n;
}

void serve(State& s) {
  LaunchTable& t = *s.table;
  uint32_t seen = t.snapshot_request.load(std::memory_order_acquire);
  while (!s.stopping.load()) {
    futex_wait(t.snapshot_request, seen, 200'000'000);
    const uint32_t request = t.snapshot_request.load(std::memory_order_acquire);
    if (request == seen) continue;
    seen = request;
    snapshot(s);
    t.snapshot_ns = monotonic_ns();
    t.snapshot_done.store(request, std::memory_order_release);
    futex_wake_all(t.snapshot_done);
  }
}

std::string load_api(Api& a, void*& lib) {
  const char* const names[] = {"libcupti.so.13", "libcupti.so",
                               "/usr/local/cuda/lib64/libcupti.so.13",
                               "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"};
  for (const char* n : names) {
    if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  }
  if (lib == nullptr) return "libcupti.so.13 not found (the CUDA toolkit's CUPTI)";
  if (!resolve(lib, "cuptiSubscribe", a.subscribe) ||
      !resolve(lib, "cuptiEnableCallback", a.enable_callback) ||
      !resolve(lib, "cuptiUnsubscribe", a.unsubscribe) ||
      !resolve(lib, "cuptiGetResultString", a.result_string)) {
    return "libcupti lacks the callback API";
  }
  const bool driver =
      driver_fn("cuEventCreate", a.event_create) && driver_fn("cuEventRecord", a.event_record) &&
      driver_fn("cuEventQuery", a.event_query) &&
      driver_fn("cuKernelGetFunction", a.kernel_get_function) &&
      driver_fn("cuOccupancyMaxActiveBlocksPerMultiprocessor", a.occupancy) &&
      driver_fn("cuStreamIsCapturing", a.stream_is_capturing) &&
      driver_fn("cuCtxGetExecAffinity", a.ctx_exec_affinity) &&
      driver_fn("cuCtxGetDevice", a.ctx_get_device) &&
      driver_fn("cuDeviceGetAttribute", a.device_attribute) &&
      driver_fn("cuCtxSetCurrent", a.ctx_set_current) &&
      driver_fn("cuStreamCreate", a.stream_create) &&
      driver_fn("cuMemcpyDtoHAsync", a.memcpy_dtoh_async) &&
      driver_fn("cuStreamQuery", a.stream_query) && driver_fn("cuMemAllocHost", a.mem_alloc_host);
  return driver ? "" : "the CUDA driver lacks an entry point the observer needs";
}

std::string subscribe(State& s) {
  CUptiResult rc = s.api.subscribe(&s.subscriber, on_callback, nullptr);
  if (rc != CUPTI_SUCCESS) {
    const char* text = nullptr;
    s.api.result_string(rc, &text);
    return fmt::format("cuptiSubscribe failed: {} (another CUPTI client, e.g. a profiler?)",
                       text != nullptr ? text : "?");
  }
  const CUpti_CallbackId runtime[] = {
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
  const CUpti_CallbackId driver[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,   CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
  for (CUpti_CallbackId id : runtime) {
    rc = s.api.enable_callback(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
    if (rc != CUPTI_SUCCESS) return fmt::format("cuptiEnableCallback(runtime {}) failed", id);
  }
  for (CUpti_CallbackId id : driver) {
    rc = s.api.enable_callback(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (rc != CUPTI_SUCCESS) return fmt::format("cuptiEnableCallback(driver {}) failed", id);
  }
  return "";
}

}  // namespace

std::string start(LaunchTable* table, const volatile uint32_t* in_kernel) {
  State& s = state();
  if (s.on) return "";
  s.table = table;
  s.in_kernel = in_kernel;
  std::string why = load_api(s.api, s.cupti_lib);
  if (why.empty()) why = subscribe(s);
  if (!why.empty()) {
    if (s.subscriber != nullptr) s.api.unsubscribe(s.subscriber);
    s.subscriber = nullptr;
    copy_text(table->note, sizeof table->note, "launches not observed: " + why);
    table->state = ObserverState::kOff;
    return why;
  }
  copy_text(table->note, sizeof table->note, "CUPTI launch callbacks and events");
  table->state = ObserverState::kOn;
  s.on = true;
  s.server = std::thread([&s] { serve(s); });
  return "";
}

void stop() {
  State& s = state();
  if (!s.on.exchange(false)) return;
  s.stopping = true;
  futex_wake_all(s.table->snapshot_request);
  if (s.server.joinable()) s.server.join();
  s.api.unsubscribe(s.subscriber);
  s.subscriber = nullptr;
}

bool active() { return state().on.load(); }

void set_case(int case_index) { state().case_index.store(case_index); }

OpScope::OpScope(int op_idx, int slot, int dcp_size) : saved_{t_op, t_slot, t_dcp} {
  t_op = op_idx;
  t_slot = slot;
  t_dcp = dcp_size;
}

OpScope::~OpScope() {
  t_op = saved_[0];
  t_slot = saved_[1];
  t_dcp = saved_[2];
}

void name_stream(const void* stream, const std::string& label) {
  State& s = state();
  if (!s.on) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  auto [it, added] = s.streams.try_emplace(stream, static_cast<uint32_t>(s.streams.size()), label);
  it->second.second = label;
}

void set_pressure_sms(int sms) {
  State& s = state();
  s.pressure_sms.store(sms);
  if (s.on) s.table->pressure_sms = sms;
}

Unobserved::Unobserved() : saved_(t_busy) { t_busy = true; }
Unobserved::~Unobserved() { t_busy = saved_; }

void add_dump_region(const void* owner, int dcp_size, int context, const std::string& name,
                     bool local, const void* device_ptr, uint64_t bytes) {
  State& s = state();
  if (!s.on) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.dump_host == nullptr) {
    void* p = nullptr;
    const size_t total = size_t{kMaxControlDumps} * kControlDumpBytes;
    t_busy = true;  // not a launch, but keep our own call out of the callbacks
    if (s.api.mem_alloc_host(&p, total) == CUDA_SUCCESS) s.dump_host = static_cast<uint8_t*>(p);
    t_busy = false;
  }
  DumpRegion d{owner, ControlDump{}, reinterpret_cast<CUdeviceptr>(device_ptr)};
  copy_text(d.meta.name, sizeof d.meta.name, name);
  d.meta.dcp_size = dcp_size;
  d.meta.context = context;
  d.meta.local = local ? 1 : 0;
  d.meta.bytes = bytes;
  s.regions.push_back(d);
}

void remove_dump_regions(const void* owner) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::erase_if(s.regions, [owner](const DumpRegion& d) { return d.owner == owner; });
}

}  // namespace dcp::launch_observer
