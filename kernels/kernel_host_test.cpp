// CPU-only tests of the kernels' host-visible pieces: the shared combine
// arithmetic (kernels/combine_math.h) against the independent reference
// conversions, masking lookup, workspace layout, parameter validation and the
// mutant table. Nothing here touches a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <ios>
#include <limits>
#include <set>
#include <string>

#include "combine_math.h"
#include "direct_a2a.h"
#include "mutants.h"
#include "numeric.h"
#include "stock_a2a.h"

namespace dcp {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool same_half(uint16_t a, uint16_t b, bool bf16) {
  // NaN payloads may differ between implementations; NaN must stay NaN.
  const uint16_t exp_mask = bf16 ? 0x7F80 : 0x7C00;
  const uint16_t man_mask = bf16 ? 0x007F : 0x03FF;
  const bool a_nan = (a & exp_mask) == exp_mask && (a & man_mask) != 0;
  const bool b_nan = (b & exp_mask) == exp_mask && (b & man_mask) != 0;
  if (a_nan || b_nan) return a_nan && b_nan;
  return a == b;
}

TEST_CASE("fp16 and bf16 widening agrees with the reference for every bit pattern") {
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    for (const bool bf16 : {false, true}) {
      const float got = bf16 ? math::bf16_to_float(bits) : math::fp16_to_float(bits);
      const float want = bf16 ? bf16_bits_to_float(bits) : fp16_bits_to_float(bits);
      if (!(got == want || (std::isnan(got) && std::isnan(want))) ||
          std::signbit(got) != std::signbit(want)) {
        ++bad;
      }
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("fp16 and bf16 rounding agrees with the reference (ties, subnormals, overflow)") {
  int bad = 0;
  uint32_t first_bad = 0;
  auto probe = [&](uint32_t u) {
    const float f = from_bits(u);
    const bool ok = same_half(math::float_to_fp16(f), float_to_fp16_bits(f), false) &&
                    same_half(math::float_to_bf16(f), float_to_bf16_bits(f), true);
    if (!ok && bad++ == 0) first_bad = u;
  };
  // A stride coprime to 2^32 visits every region of the bit space.
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 997) probe(static_cast<uint32_t>(u));
  // Exact ties and their neighbours around every fp16 value, normal and subnormal.
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const float lo = fp16_bits_to_float(static_cast<uint16_t>(h));
    const float hi = fp16_bits_to_float(static_cast<uint16_t>(h + 1));
    const double mid = (static_cast<double>(lo) + hi) / 2;
    uint32_t m;
    const float mid_f = static_cast<float>(mid);  // exact: fp16 midpoints fit in fp32
    std::memcpy(&m, &mid_f, sizeof m);
    for (uint32_t v : {m - 1, m, m + 1}) {
      probe(v);
      probe(v | 0x80000000u);
    }
  }
  for (uint32_t u : {0x477FEFFFu, 0x477FF000u, 0x33000000u, 0x33000001u, 0x7F800000u, 0x7FC00000u,
                     0x7F800001u, 0x00000001u}) {
    probe(u);
  }
  CHECK_MESSAGE(bad == 0, "first mismatch at float bits 0x" << std::hex << first_bad);
}

TEST_CASE("LSE conversion: base e times log2(e); NaN and +inf count as -inf") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(math::lse_to_base2(3.0f, false) == 3.0f);
  CHECK(math::lse_to_base2(1.0f, true) == math::kLog2e);
  CHECK(math::lse_to_base2(std::nanf(""), false) == -inf);
  CHECK(math::lse_to_base2(inf, true) == -inf);
  CHECK(math::lse_to_base2(-inf, true) == -inf);
}

TEST_CASE("combine weights: normalised, -inf sources weigh exactly 0, all -inf is empty") {
  const float inf = std::numeric_limits<float>::infinity();
  float w[kMaxDcpSize];
  SUBCASE("equal LSEs share equally") {
    const float l[4] = {5, 5, 5, 5};
    REQUIRE(math::combine_weights(l, 4, w));
    for (int s = 0; s < 4; ++s) CHECK(w[s] == 0.25f);
  }
  SUBCASE("one -inf source") {
    const float l[3] = {1, -inf, 0};
    REQUIRE(math::combine_weights(l, 3, w));
    CHECK(w[1] == 0.0f);
    CHECK(w[0] == doctest::Approx(2.0 / 3));
    CHECK(w[2] == doctest::Approx(1.0 / 3));
  }
  SUBCASE("a huge gap underflows to weight 0, the dominant source gets 1") {
    const float l[2] = {0, -300};
    REQUIRE(math::combine_weights(l, 2, w));
    CHECK(w[0] == 1.0f);
    CHECK(w[1] == 0.0f);
  }
  SUBCASE("every source -inf") {
    const float l[2] = {-inf, -inf};
    CHECK_FALSE(math::combine_weights(l, 2, w));
    CHECK(w[0] == 0.0f);
    CHECK(w[1] == 0.0f);
  }
}

TEST_CASE("token_masked follows query_start_loc and seq_lens") {
  const int32_t qsl[4] = {0, 2, 3, 6};
  const int32_t lens[3] = {7, 0, 5};
  CHECK_FALSE(math::token_masked(lens, qsl, 3, 0));
  CHECK_FALSE(math::token_masked(lens, qsl, 3, 1));
  CHECK(math::token_masked(lens, qsl, 3, 2));
  CHECK_FALSE(math::token_masked(lens, qsl, 3, 5));
  CHECK_FALSE(math::token_masked(lens, qsl, 3, 6));  // outside every sequence
  CHECK_FALSE(math::token_masked(nullptr, nullptr, 0, 2));
  // Padding with empty trailing sequences (what the GPU backend does) changes nothing.
  const int32_t qsl_pad[6] = {0, 2, 3, 6, 6, 6};
  const int32_t lens_pad[5] = {7, 0, 5, 1, 1};
  for (int t = 0; t < 8; ++t) {
    CHECK(math::token_masked(lens_pad, qsl_pad, 5, t) == math::token_masked(lens, qsl, 3, t));
  }
}

TEST_CASE("direct workspace layout: aligned, disjoint regions per slot") {
  DirectWorkspaceLayout l;
  l.dcp_size = 4;
  l.max_tokens = 17;
  l.heads_per_rank = 3;
  l.head_dim = 24;
  l.num_slots = 2;
  CHECK(l.out_region_bytes() >= size_t{2} * 4 * 17 * 3 * 24 * 2);
  CHECK(l.lse_region_bytes() >= size_t{2} * 4 * 17 * 3 * 4);
  for (int s = 0; s < 2; ++s) {
    CHECK(l.out_offset(s) % 256 == 0);
    CHECK(l.lse_offset(s) % 256 == 0);
    CHECK(l.flags_offset(s) % 256 == 0);
    CHECK(l.lse_offset(s) >= l.out_offset(s) + l.out_region_bytes());
    CHECK(l.flags_offset(s) >= l.lse_offset(s) + l.lse_region_bytes());
  }
  CHECK(l.out_offset(1) >= l.flags_offset(0) + l.flag_region_bytes());
  CHECK(l.total_bytes() == l.flags_offset(1) + l.flag_region_bytes());
}

DirectA2AParams valid_params(uint8_t* arena) {
  DirectA2AParams p;
  std::memset(&p, 0, sizeof p);
  p.partial_output = arena;
  p.partial_lse = arena + 256;
  p.out_token_stride = 2 * 4 * 16;
  p.lse_token_stride = 8;
  p.out_dtype = ElemType::kBf16;
  p.lse_dtype = ElemType::kFp32;
  p.num_tokens = 3;
  p.dcp_size = 2;
  p.heads_per_rank = 4;
  p.head_dim = 16;
  p.max_tokens = 8;
  p.group_rank = 1;
  for (int d = 0; d < 2; ++d) {
    p.out_recv[d] = arena + 512;
    p.lse_recv[d] = reinterpret_cast<float*>(arena + 768);
    p.flags[d] = reinterpret_cast<uint32_t*>(arena + 1024);
  }
  p.state = reinterpret_cast<DirectSlotState*>(arena + 1280);
  p.state_slot0 = p.state;
  p.output = arena + 1536;
  p.spin_timeout_ns = 1000;
  return p;
}

TEST_CASE("validate_direct_params accepts a good call and names each bad field") {
  alignas(16) static uint8_t arena[2048];
  DirectA2AParams p = valid_params(arena);
  CHECK(validate_direct_params(p).empty());
  auto bad = [&](auto mutate, const std::string& needle) {
    DirectA2AParams q = valid_params(arena);
    mutate(q);
    const std::string why = validate_direct_params(q);
    CHECK_MESSAGE(why.find(needle) != std::string::npos, "got: " << why);
  };
  bad([](DirectA2AParams& q) { q.out_dtype = ElemType::kFp32; }, "output dtype");
  bad([](DirectA2AParams& q) { q.num_tokens = 9; }, "tokens");
  bad([](DirectA2AParams& q) { q.out_token_stride = 2 * 4 * 16 + 4; }, "multiple of 8");
  bad([](DirectA2AParams& q) { q.lse_token_stride = 7; }, "LSE token stride");
  bad([](DirectA2AParams& q) { q.head_dim = 12; }, "head dim");
  bad([](DirectA2AParams& q) { q.dcp_size = 9; }, "dcp size");
  bad([](DirectA2AParams& q) { q.seq_lens = reinterpret_cast<const int32_t*>(q.output); },
      "together");
  bad([](DirectA2AParams& q) { q.partial_output = static_cast<const uint8_t*>(q.output) + 2; },
      "aligned");
  // A launch refused by validation never reaches the device.
  p.num_tokens = 0;
  CHECK(launch_direct_a2a(p, nullptr) == cudaErrorInvalidValue);
  p = valid_params(arena);
  CHECK(launch_direct_a2a_mutant(p, 999, nullptr) == cudaErrorInvalidValue);  // unknown mutant
  // unjoined-side-stream without its side stream is refused before any launch.
  CHECK(launch_direct_a2a_mutant(p, kMutantUnjoinedSideStream, nullptr, nullptr) ==
        cudaErrorInvalidValue);
}

TEST_CASE("stock layout and validation") {
  StockLayout l;
  l.dcp_size = 4;
  l.num_tokens = 5;
  l.heads_per_rank = 2;
  l.head_dim = 8;
  CHECK(l.out_chunk_bytes() == 5 * 2 * 8 * 2);
  CHECK(l.lse_chunk_bytes() == 5 * 2 * 4);
  StockCombineParams c;
  std::memset(&c, 0, sizeof c);
  c.out_dtype = ElemType::kFp16;
  c.num_tokens = 5;
  c.dcp_size = 4;
  c.heads_per_rank = 2;
  c.head_dim = 8;
  CHECK(validate_stock_combine(c).find("null") != std::string::npos);
}

TEST_CASE("mutant table: unique ids and names, every required kind, honest catchability") {
  std::set<int> ids;
  std::set<std::string_view> names, kinds;
  for (const GpuMutantInfo& m : kGpuMutants) {
    CHECK(m.id > 0);
    CHECK(ids.insert(m.id).second);
    CHECK(names.insert(m.name).second);
    kinds.insert(m.kind);
    CHECK(find_gpu_mutant(m.id) == &m);
    CHECK(find_gpu_mutant(m.name) == &m);
    CHECK(m.catchable_on_shared_gpu == m.uncatchable_reason.empty());
  }
  CHECK(ids.size() >= 15);
  for (std::string_view k :
       {"protocol", "memory-ordering", "indexing", "masking", "arithmetic", "sizing",
        "forward-progress"}) {
    CHECK_MESSAGE(kinds.count(k) == 1, k);
  }
  // A reordering between ranks sharing a GPU shows only when provoked: the
  // flag-ordering mutants that claim a shared GPU catches them name the
  // memory-stress family and need ranks that run at once.
  for (int id : {kMutantRelaxedOrdering, kMutantNoArrivalFence}) {
    const GpuMutantInfo* m = find_gpu_mutant(id);
    CHECK(m->kind == "memory-ordering");
    if (m->catchable_on_shared_gpu) {
      CHECK(m->family == "memory-stress");
      CHECK(m->needs_concurrent_ranks);
    }
  }
  CHECK(find_gpu_mutant(0) == nullptr);
}

}  // namespace
}  // namespace dcp
