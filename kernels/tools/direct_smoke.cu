// Standalone smoke test of the direct kernel, independent of the supervisor,
// workers and CUDA IPC: W "ranks" live in one process on one GPU, each with its
// own workspace and stream (peers see each other's cudaMalloc pointers
// directly), and run back-to-back calls with no host sync, alternating slots,
// then the same again through CUDA graphs. Every output element is compared
// with the shared host arithmetic (combine_math.h) to within 1 ulp of the
// output dtype (device and host exp2f may differ in the last fp32 bit).
//
// Not part of the build (kernels/CMakeLists.txt globs only kernels/*.cu).
// Build and run on a GPU machine from the repository root:
//   nvcc -std=c++17 -O2 -arch=sm_90 -Ikernels kernels/tools/direct_smoke.cu \
//        kernels/direct_a2a.cu -o /tmp/direct_smoke && /tmp/direct_smoke
//   /tmp/direct_smoke --mutant N   (expects a failure: exit 1, or a trap)
// Exit 0: every check passed; 1: a mismatch; 2: a CUDA error.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "combine_math.h"
#include "direct_a2a.h"

namespace {

using namespace dcp;

#define SMOKE_CUDA(call)                                                                          \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                               \
    }                                                                                             \
  } while (0)

struct Config {
  int W, H, D, max_tokens, T, out_pad, lse_pad;
  ElemType out, lse;
  bool base_e, masked;
};

uint64_t g_state = 0x9E3779B97F4A7C15ull;  // tool-local RNG (standalone, not the product)
double uniform() {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return (g_state >> 11) * (1.0 / 9007199254740992.0);
}

uint16_t to_half(float f, ElemType t) {
  return t == ElemType::kFp16 ? math::float_to_fp16(f) : math::float_to_bf16(f);
}
float from_half(uint16_t b, ElemType t) {
  return t == ElemType::kFp16 ? math::fp16_to_float(b) : math::bf16_to_float(b);
}

struct RankData {
  std::vector<uint16_t> out;      // T * out_stride
  std::vector<uint8_t> lse;       // T * lse_stride * elem
  std::vector<int32_t> seq_lens;  // T sequences of one token each (when masked)
};

RankData make_inputs(const Config& c, int64_t out_stride, int64_t lse_stride) {
  RankData d;
  d.out.resize(c.T * out_stride);
  for (auto& v : d.out) v = to_half(static_cast<float>(uniform() * 4 - 2), c.out);
  const size_t le = c.lse == ElemType::kFp32 ? 4 : 2;
  d.lse.resize(c.T * lse_stride * le);
  for (int64_t i = 0; i < c.T * lse_stride; ++i) {
    const float l = static_cast<float>(uniform() * 8 - 4);
    if (le == 4) {
      std::memcpy(&d.lse[i * 4], &l, 4);
    } else {
      const uint16_t b = to_half(l, c.lse);
      std::memcpy(&d.lse[i * 2], &b, 2);
    }
  }
  if (c.masked) {
    for (int t = 0; t < c.T; ++t) d.seq_lens.push_back(uniform() < 0.3 ? 0 : 5);
  }
  return d;
}

float lse_value(const Config& c, const RankData& d, int64_t idx) {
  if (c.lse == ElemType::kFp32) {
    float f;
    std::memcpy(&f, &d.lse[idx * 4], 4);
    return f;
  }
  uint16_t b;
  std::memcpy(&b, &d.lse[idx * 2], 2);
  return from_half(b, c.lse);
}

// Expected output of `rank` for inputs `all` (one per source), host arithmetic.
std::vector<float> expected(const Config& c, const std::vector<RankData>& all, int rank,
                            int64_t out_stride, int64_t lse_stride) {
  std::vector<float> want(size_t(c.T) * c.H * c.D);
  for (int t = 0; t < c.T; ++t) {
    for (int h = 0; h < c.H; ++h) {
      float l2[kMaxDcpSize], w[kMaxDcpSize];
      for (int s = 0; s < c.W; ++s) {
        const bool masked = c.masked && all[s].seq_lens[t] == 0;
        l2[s] = masked ? -INFINITY
                       : math::lse_to_base2(lse_value(c, all[s], t * lse_stride + rank * c.H + h),
                                            c.base_e);
      }
      const bool any = math::combine_weights(l2, c.W, w);
      for (int k = 0; k < c.D; ++k) {
        float acc = 0;
        for (int s = 0; any && s < c.W; ++s) {
          if (w[s] == 0) continue;
          acc = math::accumulate(
              acc, w[s], from_half(all[s].out[t * out_stride + (rank * c.H + h) * c.D + k], c.out));
        }
        want[(size_t(t) * c.H + h) * c.D + k] = from_half(to_half(acc, c.out), c.out);
      }
    }
  }
  return want;
}

// ulp of the 16-bit type at |x|.
float ulp(float x, ElemType t) {
  const int mant = t == ElemType::kFp16 ? 10 : 7;
  const int min_exp = t == ElemType::kFp16 ? -14 : -126;
  int e;
  std::frexp(std::fabs(x), &e);
  return std::ldexp(1.0f, std::max(e - 1, min_exp) - mant);
}

struct Rank {
  void* workspace = nullptr;
  DirectSlotState* states = nullptr;
  cudaStream_t stream = nullptr;
  void *in_out = nullptr, *in_lse = nullptr, *output = nullptr;
  int32_t *seq_lens = nullptr, *qsl = nullptr;
};

// Runs `calls` calls per rank (slots alternate), pipelined or through graphs;
// returns the number of mismatching elements.
long run_config(const Config& c, int calls, bool graphs, int mutant) {
  const int64_t out_stride = int64_t{c.W} * c.H * c.D + c.out_pad;
  const int64_t lse_stride = int64_t{c.W} * c.H + c.lse_pad;
  DirectWorkspaceLayout layout{c.W, c.max_tokens, c.H, c.D, kMaxSlots};
  std::vector<Rank> ranks(c.W);
  for (Rank& r : ranks) {
    SMOKE_CUDA(cudaMalloc(&r.workspace, layout.total_bytes()));
    SMOKE_CUDA(cudaMemset(r.workspace, 0, layout.total_bytes()));
    SMOKE_CUDA(cudaMalloc(&r.states, sizeof(DirectSlotState) * kMaxSlots));
    SMOKE_CUDA(cudaMemset(r.states, 0, sizeof(DirectSlotState) * kMaxSlots));
    SMOKE_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    SMOKE_CUDA(cudaMalloc(&r.in_out, calls * c.T * out_stride * 2));
    SMOKE_CUDA(cudaMalloc(&r.in_lse, calls * c.T * lse_stride * 4));
    SMOKE_CUDA(cudaMalloc(&r.output, size_t(calls) * c.T * c.H * c.D * 2));
    SMOKE_CUDA(cudaMalloc(&r.seq_lens, sizeof(int32_t) * c.T * calls));
    SMOKE_CUDA(cudaMalloc(&r.qsl, sizeof(int32_t) * (c.T + 1)));
    std::vector<int32_t> qsl(c.T + 1);
    for (int t = 0; t <= c.T; ++t) qsl[t] = t;
    SMOKE_CUDA(cudaMemcpy(r.qsl, qsl.data(), qsl.size() * 4, cudaMemcpyHostToDevice));
  }
  SMOKE_CUDA(cudaDeviceSynchronize());
  // Fresh inputs for every (call, rank): a call that combines another call's
  // data (stale parity, early signal) cannot pass by luck.
  const size_t out_bytes = c.T * out_stride * 2, lse_bytes = c.T * lse_stride * 4;
  std::vector<std::vector<RankData>> data(calls);
  for (int call = 0; call < calls; ++call) {
    for (int r = 0; r < c.W; ++r) {
      data[call].push_back(make_inputs(c, out_stride, lse_stride));
      const RankData& d = data[call][r];
      SMOKE_CUDA(cudaMemcpy(static_cast<uint8_t*>(ranks[r].in_out) + call * out_bytes, d.out.data(),
                            d.out.size() * 2, cudaMemcpyHostToDevice));
      SMOKE_CUDA(cudaMemcpy(static_cast<uint8_t*>(ranks[r].in_lse) + call * lse_bytes, d.lse.data(),
                            d.lse.size(), cudaMemcpyHostToDevice));
      if (c.masked) {
        SMOKE_CUDA(cudaMemcpy(ranks[r].seq_lens + call * c.T, d.seq_lens.data(), c.T * 4,
                              cudaMemcpyHostToDevice));
      }
    }
  }
  std::vector<std::vector<cudaGraphExec_t>> execs(c.W, std::vector<cudaGraphExec_t>(calls));
  for (int call = 0; call < calls; ++call) {
    for (int r = 0; r < c.W; ++r) {
      DirectA2AParams p;
      std::memset(&p, 0, sizeof p);
      p.partial_output = static_cast<uint8_t*>(ranks[r].in_out) + call * out_bytes;
      p.partial_lse = static_cast<uint8_t*>(ranks[r].in_lse) + call * lse_bytes;
      p.out_token_stride = out_stride;
      p.lse_token_stride = lse_stride;
      p.out_dtype = c.out;
      p.lse_dtype = c.lse;
      p.lse_base_e = c.base_e;
      p.num_tokens = c.T;
      p.dcp_size = c.W;
      p.heads_per_rank = c.H;
      p.head_dim = c.D;
      p.max_tokens = c.max_tokens;
      p.group_rank = r;
      p.slot = (call / 3) % 2;  // runs of 3 calls per slot: parities flip inside a slot
      for (int i = 0; i < c.W; ++i) {
        p.members[i] = i;
        auto* base = static_cast<uint8_t*>(ranks[i].workspace);
        p.out_recv[i] = base + layout.out_offset(p.slot);
        p.lse_recv[i] = reinterpret_cast<float*>(base + layout.lse_offset(p.slot));
        p.flags[i] = reinterpret_cast<uint32_t*>(base + layout.flags_offset(p.slot));
      }
      if (c.masked) {
        p.seq_lens = ranks[r].seq_lens + call * c.T;
        p.query_start_loc = ranks[r].qsl;
        p.num_seqs = c.T;
      }
      p.mutant = mutant;
      p.state = ranks[r].states + p.slot;
      p.state_slot0 = ranks[r].states;
      p.output = static_cast<uint8_t*>(ranks[r].output) + size_t(call) * c.T * c.H * c.D * 2;
      p.spin_timeout_ns = 5'000'000'000ull;
      auto launch = mutant ? launch_direct_a2a_mutant : launch_direct_a2a;
      if (graphs) {
        cudaGraph_t g;
        SMOKE_CUDA(cudaStreamBeginCapture(ranks[r].stream, cudaStreamCaptureModeThreadLocal));
        SMOKE_CUDA(launch(p, ranks[r].stream));
        SMOKE_CUDA(cudaStreamEndCapture(ranks[r].stream, &g));
        SMOKE_CUDA(cudaGraphInstantiate(&execs[r][call], g, 0));
        SMOKE_CUDA(cudaGraphDestroy(g));
      } else {
        SMOKE_CUDA(launch(p, ranks[r].stream));
      }
    }
  }
  if (graphs) {  // replay every rank's graphs back to back, ranks interleaved
    for (int call = 0; call < calls; ++call) {
      for (int r = 0; r < c.W; ++r) SMOKE_CUDA(cudaGraphLaunch(execs[r][call], ranks[r].stream));
    }
  }
  SMOKE_CUDA(cudaDeviceSynchronize());
  long bad = 0;
  for (int r = 0; r < c.W; ++r) {
    const size_t n = size_t(c.T) * c.H * c.D;
    std::vector<uint16_t> got(calls * n);
    SMOKE_CUDA(cudaMemcpy(got.data(), ranks[r].output, got.size() * 2, cudaMemcpyDeviceToHost));
    for (int call = 0; call < calls; ++call) {
      const std::vector<float> want = expected(c, data[call], r, out_stride, lse_stride);
      for (size_t i = 0; i < want.size(); ++i) {
        const float g = from_half(got[call * want.size() + i], c.out);
        if (!(std::fabs(g - want[i]) <= ulp(want[i], c.out))) {
          if (bad++ < 3) {
            std::printf("  mismatch rank %d call %d elem %zu: got %g want %g\n", r, call, i, g,
                        want[i]);
          }
        }
      }
    }
    for (auto& e : execs[r]) {
      if (e) cudaGraphExecDestroy(e);
    }
    cudaFree(ranks[r].workspace);
    cudaFree(ranks[r].states);
    cudaFree(ranks[r].in_out);
    cudaFree(ranks[r].in_lse);
    cudaFree(ranks[r].output);
    cudaFree(ranks[r].seq_lens);
    cudaFree(ranks[r].qsl);
    cudaStreamDestroy(ranks[r].stream);
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  // Every rank's stream needs its own hardware queue: a rank's spinning
  // combine must never sit in front of another rank's dispatch.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
  int mutant = 0;
  if (argc == 3 && std::string(argv[1]) == "--mutant") mutant = std::atoi(argv[2]);
  const ElemType kF16 = ElemType::kFp16, kB16 = ElemType::kBf16, kF32 = ElemType::kFp32;
  const std::vector<Config> configs = {
      // W  H   D  max  T  opad lpad out   lse   base_e masked
      {2, 16, 512, 128, 1, 0, 0, kB16, kF32, false, false},
      {4, 16, 512, 128, 128, 0, 0, kB16, kF32, true, false},
      {4, 16, 512, 128, 17, 64, 4, kF16, kB16, true, true},
      {2, 6, 512, 32, 31, (128 - 12) * 512, 128 - 12, kB16, kF32, false, true},  // K3-like padding
      {8, 3, 24, 20, 7, 8, 1, kF16, kF16, true, true},
      {8, 1, 8, 4, 4, 0, 0, kB16, kB16, false, false},
  };
  long total_bad = 0;
  for (const Config& c : configs) {
    for (const bool graphs : {false, true}) {
      const long bad = run_config(c, 8, graphs, mutant);
      std::printf("W=%d H=%d D=%d T=%d pad=%d/%d out=%s lse=%d base=%s masked=%d %s: %s\n", c.W,
                  c.H, c.D, c.T, c.out_pad, c.lse_pad, c.out == kF16 ? "fp16" : "bf16",
                  static_cast<int>(c.lse), c.base_e ? "e" : "2", c.masked,
                  graphs ? "graphs" : "pipelined", bad ? "FAIL" : "ok");
      total_bad += bad;
    }
  }
  std::printf("%s\n", total_bad ? "FAILED" : "all passed");
  return total_bad ? 1 : 0;
}
