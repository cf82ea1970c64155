// Litmus and memory-stress kernels (see litmus.h). Every access to a test
// location is an explicit PTX relaxed (or release/acquire) access of the
// chosen scope, so the compiler can neither merge nor reorder them: what
// reorders is the hardware.
#include "litmus.h"

#include "global_timer.cuh"

namespace dcp {
namespace {

// One PTX access or fence, at .sys or .gpu scope: OP is the instruction up to
// its scope, REST what follows it ("st.relaxed" ".global.u32 [%0], %1;").
#define LITMUS_SCOPED_ASM(kSys, OP, REST, ...)        \
  do {                                                  \
    if constexpr (kSys) {                               \
      asm volatile(OP ".sys" REST __VA_ARGS__);         \
    } else {                                            \
      asm volatile(OP ".gpu" REST __VA_ARGS__);         \
    }                                                   \
  } while (0)

template <bool kSys>
__device__ __forceinline__ void st_relaxed(uint32_t* p, uint32_t v) {
  LITMUS_SCOPED_ASM(kSys, "st.relaxed", ".global.u32 [%0], %1;", ::"l"(p), "r"(v) : "memory");
}
template <bool kSys>
__device__ __forceinline__ void st_release(uint32_t* p, uint32_t v) {
  LITMUS_SCOPED_ASM(kSys, "st.release", ".global.u32 [%0], %1;", ::"l"(p), "r"(v) : "memory");
}
template <bool kSys>
__device__ __forceinline__ uint32_t ld_relaxed(const uint32_t* p) {
  uint32_t v;
  LITMUS_SCOPED_ASM(kSys, "ld.relaxed", ".global.u32 %0, [%1];", : "=r"(v) : "l"(p) : "memory");
  return v;
}
template <bool kSys>
__device__ __forceinline__ uint32_t ld_acquire(const uint32_t* p) {
  uint32_t v;
  LITMUS_SCOPED_ASM(kSys, "ld.acquire", ".global.u32 %0, [%1];", : "=r"(v) : "l"(p) : "memory");
  return v;
}
template <bool kSys>
__device__ __forceinline__ void fence_sc() {
  LITMUS_SCOPED_ASM(kSys, "fence.sc", ";", ::: "memory");
}

// The first access of a thread and the second, ordered as `order` says for the
// thread's side (first: T0 / the writer, second: T1 / the reader).
template <bool kSys>
__device__ __forceinline__ void store_then_store(uint32_t* a, uint32_t* b, uint32_t v,
                                                 LitmusOrder order) {
  st_relaxed<kSys>(a, v);
  if (order == LitmusOrder::kFenced || order == LitmusOrder::kWriterFence) fence_sc<kSys>();
  if (order == LitmusOrder::kReleaseAcquire) {
    st_release<kSys>(b, v);
  } else {
    st_relaxed<kSys>(b, v);
  }
}
template <bool kSys>
__device__ __forceinline__ void load_then_load(const uint32_t* a, const uint32_t* b, uint32_t* ra,
                                               uint32_t* rb, LitmusOrder order) {
  *ra = order == LitmusOrder::kReleaseAcquire ? ld_acquire<kSys>(a) : ld_relaxed<kSys>(a);
  if (order == LitmusOrder::kFenced) fence_sc<kSys>();
  *rb = ld_relaxed<kSys>(b);
}

__device__ __forceinline__ uint32_t mix(uint32_t a, uint32_t b) {
  uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u + (a << 6) + (a >> 2));
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  return h ^ (h >> 13);
}

// One stress iteration of one thread: the pattern's two accesses.
__device__ __forceinline__ void stress_step(const LitmusStress& s, volatile uint32_t* v,
                                            uint32_t mask, uint32_t stress_id, uint32_t it,
                                            uint32_t& sink) {
  const uint32_t a = mix(stress_id, it) & mask;
  const uint32_t b = (a + s.stride_words) & mask;
  switch (s.pattern) {
    case StressPattern::kStoreStore: v[a] = it; v[b] = it; break;
    case StressPattern::kStoreLoad: v[a] = it; sink += v[b]; break;
    case StressPattern::kLoadStore: sink += v[a]; v[b] = it; break;
    case StressPattern::kLoadLoad: sink += v[a] + v[b]; break;
    case StressPattern::kNone: break;
  }
}

// A stress thread of a litmus launch: stress steps until `done` reaches
// `expected` (checked every 64 iterations) or max_iterations.
__device__ void stress_loop(const LitmusStress& s, uint32_t* scratch, uint32_t stress_id,
                            const uint32_t* done, uint32_t expected) {
  volatile uint32_t* v = scratch;
  const uint32_t mask = s.scratch_words - 1u;
  uint32_t sink = 0;
  for (uint32_t it = 0; it < s.max_iterations; ++it) {
    if ((it & 63u) == 0u && *reinterpret_cast<const volatile uint32_t*>(done) >= expected) break;
    stress_step(s, v, mask, stress_id, it, sink);
  }
  if (sink == 0xFFFFFFFFu) v[0] = sink;  // keeps the loads
}

// The co-running memory stress of a case (launch_memory_stress): thread 0
// looks at the release counter and the clock every 1024 steps.
__device__ bool stress_released(const volatile uint32_t* counter, uint32_t until) {
  return counter != nullptr && static_cast<int32_t>(*counter - until) >= 0;
}

__global__ void __launch_bounds__(kLitmusThreads)
    corun_stress_kernel(LitmusStress s, uint32_t* scratch, const volatile uint32_t* counter,
                        uint32_t until, uint64_t max_ns) {
  __shared__ int done;
  const uint64_t start = global_timer_ns();
  if (threadIdx.x == 0) done = stress_released(counter, until) ? 1 : 0;
  __syncthreads();
  volatile uint32_t* v = scratch;
  const uint32_t mask = s.scratch_words - 1u;
  const uint32_t id = blockIdx.x * kLitmusThreads + threadIdx.x;
  uint32_t sink = 0;
  for (uint32_t it = 0; !done;) {
    for (int k = 0; k < 1024; ++k, ++it) stress_step(s, v, mask, id, it, sink);
    __syncthreads();  // nobody reads `done` while thread 0 writes it
    if (threadIdx.x == 0 && (stress_released(counter, until) || global_timer_ns() - start >= max_ns)) {
      done = 1;
    }
    __syncthreads();
  }
  if (sink == 0xFFFFFFFFu) v[0] = sink;
}

template <bool kSys>
__global__ void __launch_bounds__(kLitmusThreads)
    oneshot_kernel(LitmusShape shape, LitmusOrder order, int instances, const uint32_t* roles,
                   uint32_t* loc, uint32_t* results, uint32_t* words, LitmusStress stress,
                   uint32_t* scratch) {
  const uint32_t test_threads = 2u * static_cast<uint32_t>(instances);
  const uint32_t test_blocks = (test_threads + kLitmusThreads - 1) / kLitmusThreads;
  if (blockIdx.x >= test_blocks) {
    stress_loop(stress, scratch, (blockIdx.x - test_blocks) * kLitmusThreads + threadIdx.x,
                words + 1, test_threads);
    return;
  }
  const uint32_t t = blockIdx.x * kLitmusThreads + threadIdx.x;
  if (t >= test_threads) return;
  // Arrive, then wait (at most 2 ms) for every test thread: the roles overlap.
  atomicAdd(words, 1u);
  const uint64_t start = global_timer_ns();
  while (*reinterpret_cast<volatile uint32_t*>(words) < test_threads && global_timer_ns() - start < 2000000) {
  }
  const uint32_t role = roles[t] & 1u;
  const uint32_t i = roles[t] >> 1;
  uint32_t* x = loc + static_cast<size_t>(i) * 32;
  uint32_t* y = loc + static_cast<size_t>(instances + i) * 32;
  uint32_t r0 = 0, r1 = 0;
  switch (shape) {
    case LitmusShape::kMp:
      if (role == 0) {
        store_then_store<kSys>(x, y, 1u, order);
      } else {
        load_then_load<kSys>(y, x, &r0, &r1, order);
        results[2 * i] = r0;
        results[2 * i + 1] = r1;
      }
      break;
    case LitmusShape::kSb: {
      uint32_t* mine = role == 0 ? x : y;
      const uint32_t* other = role == 0 ? y : x;
      st_relaxed<kSys>(mine, 1u);
      if (order == LitmusOrder::kFenced) fence_sc<kSys>();
      results[2 * i + role] = ld_relaxed<kSys>(other);
      break;
    }
    case LitmusShape::kLb: {
      const uint32_t* mine = role == 0 ? x : y;  // T0 reads x, stores y; T1 reads y, stores x
      uint32_t* other = role == 0 ? y : x;
      const uint32_t r = ld_relaxed<kSys>(mine);
      if (order == LitmusOrder::kFenced) fence_sc<kSys>();
      st_relaxed<kSys>(other, 1u);
      results[2 * i + role] = r;
      break;
    }
  }
  atomicAdd(words + 1, 1u);
}

// Control line of a counter launch's memory.
__device__ __forceinline__ uint32_t* counter_control(uint32_t* mem, int instances) {
  return mem + static_cast<size_t>(2 * instances) * 32;
}

// A counter launch's thread: a stress block's threads stress until the test
// threads are done and return false; a test thread gets its index in *t.
__device__ bool counter_test_thread(const CounterLaunch& l, const LitmusStress& stress,
                                    uint32_t* scratch, uint32_t* t) {
  const uint32_t test_blocks = (l.instances + kLitmusThreads - 1) / kLitmusThreads;
  if (blockIdx.x >= test_blocks) {
    stress_loop(stress, scratch, (blockIdx.x - test_blocks) * kLitmusThreads + threadIdx.x,
                l.words + 1, static_cast<uint32_t>(l.instances));
    return false;
  }
  *t = blockIdx.x * kLitmusThreads + threadIdx.x;
  return *t < static_cast<uint32_t>(l.instances);
}

__global__ void __launch_bounds__(kLitmusThreads)
    counter_writer_kernel(CounterLaunch l, LitmusStress stress, uint32_t* scratch) {
  uint32_t t = 0;
  if (!counter_test_thread(l, stress, scratch, &t)) return;
  uint32_t* control = counter_control(l.mem, l.instances);
  const uint64_t start = global_timer_ns();
  while (ld_relaxed<true>(control) == 0u && global_timer_ns() - start < l.wait_ns) {
  }
  if (t == 0) st_relaxed<true>(control + 2, 1u);
  const uint32_t i = l.slots[t];
  uint32_t* data = l.mem + static_cast<size_t>(i) * 32;
  uint32_t* flag = l.mem + static_cast<size_t>(l.instances + i) * 32;
  for (uint32_t r = 1; r <= l.rounds; ++r) store_then_store<true>(data, flag, r, l.order);
  atomicAdd(l.words + 1, 1u);
  atomicAdd_system(control + 1, 1u);
}

__global__ void __launch_bounds__(kLitmusThreads)
    counter_reader_kernel(CounterLaunch l, LitmusStress stress, uint32_t* scratch) {
  uint32_t t = 0;
  if (!counter_test_thread(l, stress, scratch, &t)) return;
  uint32_t* control = counter_control(l.mem, l.instances);
  if (t == 0) st_relaxed<true>(control, 1u);
  const uint64_t start = global_timer_ns();
  while (ld_relaxed<true>(control + 2) == 0u && global_timer_ns() - start < l.wait_ns) {
  }
  const uint32_t i = l.slots[t];
  const uint32_t* data = l.mem + static_cast<size_t>(i) * 32;
  const uint32_t* flag = l.mem + static_cast<size_t>(l.instances + i) * 32;
  unsigned long long counts[4] = {0, 0, 0, 0};
  for (uint32_t s = 0; s < l.max_samples; ++s) {
    if ((s & 255u) == 255u && global_timer_ns() - start > 2 * l.wait_ns) break;  // bounded
    uint32_t f = 0, d = 0;
    load_then_load<true>(flag, data, &f, &d, l.order);
    ++counts[static_cast<int>(classify_counter_sample(f, d, l.rounds))];
    if (f == l.rounds) break;
  }
  for (int c = 0; c < 4; ++c) {
    if (counts[c] != 0) atomicAdd(l.counts + c, counts[c]);
  }
  atomicAdd(l.words + 1, 1u);
}

int grid_of(int test_threads, const LitmusStress& stress) {
  const int stress_blocks = stress.pattern == StressPattern::kNone ? 0 : stress.blocks;
  return (test_threads + kLitmusThreads - 1) / kLitmusThreads + stress_blocks;
}

bool valid_stress(const LitmusStress& s, const uint32_t* scratch) {
  if (s.pattern == StressPattern::kNone) return true;
  const bool power_of_two = s.scratch_words != 0 && (s.scratch_words & (s.scratch_words - 1)) == 0;
  return scratch != nullptr && s.blocks > 0 && power_of_two;
}

bool valid_counter(const CounterLaunch& l) {
  return l.instances > 0 && l.rounds > 0 && l.slots != nullptr && l.mem != nullptr &&
         l.words != nullptr && l.order != LitmusOrder::kWriterFence;
}

}  // namespace

cudaError_t launch_litmus_oneshot(LitmusShape shape, LitmusOrder order, bool system_scope,
                                  int instances, const uint32_t* roles, uint32_t* locations,
                                  uint32_t* results, uint32_t* words, const LitmusStress& stress,
                                  uint32_t* scratch, cudaStream_t stream) {
  if (instances < 1 || roles == nullptr || locations == nullptr || results == nullptr ||
      words == nullptr || !valid_stress(stress, scratch)) {
    return cudaErrorInvalidValue;
  }
  const int grid = grid_of(2 * instances, stress);
  if (system_scope) {
    oneshot_kernel<true><<<grid, kLitmusThreads, 0, stream>>>(shape, order, instances, roles,
                                                              locations, results, words, stress,
                                                              scratch);
  } else {
    oneshot_kernel<false><<<grid, kLitmusThreads, 0, stream>>>(shape, order, instances, roles,
                                                               locations, results, words, stress,
                                                               scratch);
  }
  return cudaGetLastError();
}

cudaError_t launch_memory_stress(const LitmusStress& stress, uint32_t* scratch,
                                 const volatile uint32_t* done, uint32_t until, uint64_t max_ns,
                                 cudaStream_t stream) {
  if (stress.pattern == StressPattern::kNone || !valid_stress(stress, scratch) || max_ns == 0) {
    return cudaErrorInvalidValue;
  }
  corun_stress_kernel<<<stress.blocks, kLitmusThreads, 0, stream>>>(stress, scratch, done, until,
                                                                    max_ns);
  return cudaGetLastError();
}

namespace {
__global__ void release_stress_kernel(uint32_t* done) { atomicAdd(done, 1u); }
}  // namespace

cudaError_t launch_memory_stress_release(uint32_t* done, cudaStream_t stream) {
  if (done == nullptr) return cudaErrorInvalidValue;
  release_stress_kernel<<<1, 1, 0, stream>>>(done);
  return cudaGetLastError();
}

cudaError_t launch_counter_writer(const CounterLaunch& launch, const LitmusStress& stress,
                                  uint32_t* scratch, cudaStream_t stream) {
  if (!valid_counter(launch) || !valid_stress(stress, scratch)) return cudaErrorInvalidValue;
  counter_writer_kernel<<<grid_of(launch.instances, stress), kLitmusThreads, 0, stream>>>(
      launch, stress, scratch);
  return cudaGetLastError();
}

cudaError_t launch_counter_reader(const CounterLaunch& launch, const LitmusStress& stress,
                                  uint32_t* scratch, cudaStream_t stream) {
  if (!valid_counter(launch) || launch.counts == nullptr || launch.max_samples == 0 ||
      !valid_stress(stress, scratch)) {
    return cudaErrorInvalidValue;
  }
  counter_reader_kernel<<<grid_of(launch.instances, stress), kLitmusThreads, 0, stream>>>(
      launch, stress, scratch);
  return cudaGetLastError();
}

}  // namespace dcp
