// The device checker's arithmetic (kernels/device_check_row.h), compiled for
// the host, against the CPU checker: on many random calls, with outputs near
// and past the tolerance, both must reach the same verdict bit for bit (the
// counts, the first mismatches' positions, got and want). So a CPU-only CI
// guards the device checker's arithmetic; the GPU run (ci/gpu.sh, the audit)
// guards its compilation for the device.
#include "device_verdict.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "check_math.h"
#include "device_check_row.h"
#include "geometry.h"
#include "mix.h"
#include "numeric.h"
#include "random_case.h"
#include "row_reference.h"

namespace dcp {
namespace {

// The device's value table (value_table_slot), built on the host from the
// same formula the device's fill kernel evaluates.
const uint16_t* host_value_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(kDeviceValueTableSlots);
    for (int f = 0; f < 2; ++f) {
      for (int k = 0; k < 4; ++k) {
        for (uint32_t i = 0; i < kValueTableSize; ++i) {
          t[value_table_slot(f == 1, k, i)] = value_table_bits(f == 1, k, i);
        }
      }
    }
    return t;
  }();
  return table.data();
}

bool same_bits(const ElementCheck& a, const ElementCheck& b) {
  const auto bits = [](double x) { return check_math::dbits(x); };
  return bits(a.got) == bits(b.got) && bits(a.want) == bits(b.want) && bits(a.tol) == bits(b.tol) &&
         a.pass == b.pass;
}

// The device checker's kernel, as a host loop: rows in order, per row the
// combined LSE then the dims, counting as its row blocks do and reporting as
// its last block does (flagged rows in order, up to kDeviceCheckReported).
CallCheck device_arithmetic(const Case& c, int group_idx, int group_rank, int global_rank, int op,
                            const std::vector<uint8_t>& out, const std::vector<float>* lse) {
  const OpGenerator gen(c, group_idx, op);
  DeviceCheckParams p = device_check_params(c, gen, group_rank);
  const std::vector<uint8_t> kinds = row_kinds_of(c, gen);
  p.output = out.data();
  p.combined_lse = lse != nullptr ? lse->data() : nullptr;
  p.row_kinds = kinds.data();
  p.table = host_value_table();
  DeviceCheckResult r{};
  auto note = [&](int row, int dim, const ElementCheck& e) {
    ++r.num_mismatches;
    r.num_nan += check_math::is_nan(e.got) ? 1 : 0;
    report_mismatch(r, p, row, dim, e);
  };
  for (int row = 0; row < p.num_tokens * p.heads; ++row) {
    CheckRow cr;
    check_row_setup(p, row, cr);
    if (p.combined_lse != nullptr) {
      const ElementCheck e = check_row_lse(p, cr, row);
      ++r.num_checked;
      if (!e.pass) note(row, -1, e);
    }
    // Counted as the kernel's warps and lanes batch them (the row's parts,
    // check_elements), each dim exactly once; noted in dim order as its
    // report does it (check_element): the same bits.
    std::vector<ElementCheck> es(static_cast<size_t>(p.head_dim));
    std::vector<int> seen(static_cast<size_t>(p.head_dim), 0);
    const int parts = check_warps_per_row(p.num_tokens * p.heads, p.head_dim);
    for (int part = 0; part < parts; ++part) {
      for (int lane = 0; lane < 32; ++lane) {
        const PartDims dims = check_row_part_dims(parts, part, lane);
        for (int first = dims.first; first < p.head_dim; first += dims.step * kCheckElementBatch) {
          const int n = check_batch_size(p.head_dim, first, dims.step);
          ElementCheck batch[kCheckElementBatch];
          check_elements<kCheckElementBatch>(p, cr, row, first, dims.step, n, batch);
          ElementCounts counted, want_counts;  // the kernel counts with count_elements
          if (p.out_format == 1) {
            count_elements<true, kCheckElementBatch>(p, cr, row, first, dims.step, n, counted);
          } else {
            count_elements<false, kCheckElementBatch>(p, cr, row, first, dims.step, n, counted);
          }
          for (int k = 0; k < n; ++k) {
            es[static_cast<size_t>(first + dims.step * k)] = batch[k];
            ++seen[static_cast<size_t>(first + dims.step * k)];
            want_counts.add(batch[k]);
          }
          if (counted.checked != want_counts.checked || counted.bad != want_counts.bad ||
              counted.nan != want_counts.nan) {
            FAIL_CHECK("row " << row << " dims from " << first << ": counted " << counted.bad
                              << " failed, " << counted.nan << " NaN of " << counted.checked
                              << ", the batch " << want_counts.bad << ", " << want_counts.nan
                              << " of " << want_counts.checked);
          }
        }
      }
    }
    if (std::count(seen.begin(), seen.end(), 1) != p.head_dim)
      FAIL_CHECK("row " << row << ": a dim not checked exactly once");
    for (int d = 0; d < p.head_dim; ++d) {
      const ElementCheck& e = es[static_cast<size_t>(d)];
      const ElementCheck one = check_element(p, cr, row, d);
      if (!same_bits(e, one)) FAIL_CHECK("row " << row << " dim " << d << ": batch and single differ");
      ++r.num_checked;
      if (!e.pass) note(row, d, e);
    }
  }
  return call_check_of(r, c, global_rank, op);
}

// A kernel's output: the float64 reference rounded once, then `edits`
// elements moved by a few ulps, to NaN, to poison, to zero or far away.
std::vector<uint8_t> perturbed_output(const Case& c, int group_idx, int group_rank, int op,
                                      uint64_t key, int edits) {
  std::vector<uint8_t> out = rounded_reference_output(c, group_idx, group_rank, op);
  const Format f = format_of(c.out_dtype);
  const size_t n = out.size() / 2;
  Rng rng(key);
  for (int k = 0; k < edits; ++k) {
    const size_t i = static_cast<size_t>(rng.next() % n);
    const uint32_t bits = read_bits(f, out.data(), i);
    uint32_t now = bits;
    switch (rng.below(6)) {
      case 0: now = bits + 1; break;
      case 1: now = bits - 1; break;
      case 2: now = bits + static_cast<uint32_t>(rng.between(2, 4)); break;
      case 3: now = quiet_nan_bits(f); break;
      case 4: now = all_ones_bits(f); break;
      case 5: now = bits ^ 0x4000u; break;
    }
    write_bits(f, out.data(), i, now & 0xFFFFu);
  }
  return out;
}

// The combined LSE a correct fp32 kernel writes (the reference rounded to
// float), with a few rows nudged by ulps or set to NaN.
std::vector<float> perturbed_lse(const Case& c, int group_idx, int group_rank, int op,
                                 uint64_t key) {
  const OpGenerator gen(c, group_idx, op);
  const int hc = c.geometry.heads_per_rank;
  std::vector<float> lse(static_cast<size_t>(c.num_tokens) * hc);
  RowReference r;
  Rng rng(key);
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < hc; ++h) {
      row_weights(c, gen, t, group_rank * hc + h, r);
      float v = static_cast<float>(row_lse_bound(c, r.weights).want);
      if (rng.chance(0.05)) {
        uint32_t b;
        std::memcpy(&b, &v, sizeof b);
        b += static_cast<uint32_t>(rng.between(1, 64)) * (rng.chance(0.5) ? 1u : 0xFFFFFFFFu);
        std::memcpy(&v, &b, sizeof v);
      }
      if (rng.chance(0.01)) v = std::numeric_limits<float>::quiet_NaN();
      lse[static_cast<size_t>(t) * hc + h] = v;
    }
  }
  return lse;
}

TEST_CASE("the device checker's warps and batches cover each dim of a row exactly once") {
  for (int rows : {1, 16, 64, 255, 256, 2048}) {
    for (int head_dim : {8, 40, 64, 128, 512, 576}) {
      const int parts = check_warps_per_row(rows, head_dim);
      CHECK(parts >= 1);
      CHECK(32 * (parts - 1) < head_dim);  // every part has dims
      std::vector<int> seen(static_cast<size_t>(head_dim), 0);
      for (int part = 0; part < parts; ++part) {
        for (int lane = 0; lane < 32; ++lane) {
          const PartDims d = check_row_part_dims(parts, part, lane);
          for (int first = d.first; first < head_dim; first += d.step * kCheckElementBatch) {
            const int n = check_batch_size(head_dim, first, d.step);
            CHECK(n >= 1);
            CHECK(n <= kCheckElementBatch);
            for (int k = 0; k < n; ++k) ++seen[static_cast<size_t>(first + d.step * k)];
          }
        }
      }
      INFO("rows " << rows << ", head_dim " << head_dim);
      CHECK(std::count(seen.begin(), seen.end(), 1) == head_dim);
    }
  }
}

TEST_CASE("the device checker's arithmetic agrees with the CPU checker bit for bit") {
  const Geometry g = custom_geometry(4, 64, 40);
  int calls = 0, failing = 0, passing = 0;
  for (uint64_t index = 0; index < 160; ++index) {
    const int world = 2 + static_cast<int>(index % 7);  // groups of 2 .. 8
    const Case c = random_case(0xDC9C35, index, world, g);
    if (!device_checkable(c, CheckProfile{})) continue;
    const int group_rank = static_cast<int>(index % static_cast<uint64_t>(c.dcp_size));
    const int op = static_cast<int>(index % 3);
    const int edits = static_cast<int>(index % 5) * 3;  // 0 .. 12 edited elements
    const auto out = perturbed_output(c, 0, group_rank, op, hash_all(index, 1), edits);
    const bool with_lse = index % 2 == 1;
    const std::vector<float> lse = perturbed_lse(c, 0, group_rank, op, hash_all(index, 2));
    CheckProfile profile;
    profile.combined_lse = with_lse;
    const std::span<const uint8_t> lse_bytes(reinterpret_cast<const uint8_t*>(lse.data()),
                                             with_lse ? lse.size() * sizeof(float) : 0);
    const CallCheck cpu = check_call_output(c, 0, group_rank, 7, op, out, lse_bytes, profile);
    const CallCheck dev = device_arithmetic(c, 0, group_rank, 7, op, out, with_lse ? &lse : nullptr);
    INFO(format_case_id(c), " rank ", group_rank, " op ", op);
    CHECK(checker_disagreement(dev, 1, cpu, 1) == "");
    ++calls;
    (cpu.num_mismatches > 0 ? failing : passing) += 1;
  }
  // Both verdicts were exercised.
  CHECK(calls >= 150);
  CHECK(failing >= 40);
  CHECK(passing >= 20);
}

// count_elements screens with |want| for the |w x| sum: never a larger
// tolerance than the element's (so what passes it passes), and an element
// between the two is counted again exactly.
TEST_CASE("the count's screen never passes what the exact tolerance fails") {
  namespace cm = check_math;
  Rng rng(0x5C4EE7);
  const auto u = [&rng] { return unit_double(rng.next()); };
  int between = 0;
  for (int i = 0; i < 200000; ++i) {
    const bool bf16 = i % 2 == 0;
    const int mantissa = bf16 ? 7 : 10, bias = bf16 ? 127 : 15;
    const double want = std::ldexp(u() * 2 - 1, static_cast<int>(rng.below(40)) - 20);
    const double abs_sum = cm::add(cm::abs(want), std::ldexp(u(), static_cast<int>(rng.below(40)) - 20));
    const double scale = cm::bound_scale(2 + static_cast<int>(rng.below(7)), u() * 40);
    const double screen = cm::element_tolerance(mantissa, bias, want, cm::abs(want), scale);
    const double exact = cm::element_tolerance(mantissa, bias, want, abs_sum, scale);
    REQUIRE(screen <= exact);
    const double got = want + (u() * 2 - 1) * 2 * exact;
    if (cm::element_passes(got, want, screen)) REQUIRE(cm::element_passes(got, want, exact));
    between += !cm::element_passes(got, want, screen) && cm::element_passes(got, want, exact);
  }
  CHECK(between > 1000);  // the property was tested where it matters
}

TEST_CASE("an element the screen cannot pass is counted from its exact tolerance") {
  namespace cm = check_math;
  // Two sources of weight 1/2 whose table values cancel at one dim: want is
  // 0 there, so the screen's tolerance is ~2^-100, the exact one ~u32 |x|.
  const uint16_t* table = host_value_table();
  uint32_t o2 = 0;
  int dim = -1;
  for (uint32_t o = 1; o < kValueTableSize && dim < 0; ++o) {
    for (int d = 0; d < 8 && dim < 0; ++d) {
      if (table[value_table_slot(true, 0, static_cast<uint32_t>(d))] ==
          (table[value_table_slot(true, 0, (o + static_cast<uint32_t>(d)) & (kValueTableSize - 1))] ^ 0x8000u)) {
        o2 = o;
        dim = d;
      }
    }
  }
  REQUIRE(dim >= 0);
  DeviceCheckParams p;
  p.num_tokens = 1;
  p.heads = 1;
  p.head_dim = 8;
  p.dcp_size = 2;
  p.table = table;
  CheckRow r;
  r.count = 2;
  r.any = true;
  r.weight[0] = r.weight[1] = 0.5;
  r.draw[0] = RowDraw{0, 0};
  r.draw[1] = RowDraw{o2, 0};
  r.scale = cm::bound_scale(2, 4.0);
  // The output: the reference rounded to bf16, and at `dim` 2^-20 instead of 0.
  std::vector<uint8_t> out(16);
  p.output = out.data();
  ElementCheck ref[8];
  check_elements<8>(p, r, 0, 0, 1, 8, ref);  // for want
  for (int d = 0; d < 8; ++d) {
    const uint16_t h = d == dim ? 0x3580 : float_to_bf16_bits(static_cast<float>(ref[d].want));  // 0x3580: 2^-20
    write_bits(Format::kBf16, out.data(), static_cast<size_t>(d), h);
  }
  ElementCheck e[8];
  check_elements<8>(p, r, 0, 0, 1, 8, e);
  REQUIRE(e[dim].want == 0);
  CHECK(e[dim].pass);  // within u32 |x| scale
  CHECK_FALSE(element_verdict<true>(r, 0x3580, e[dim].want, 0).pass);  // not within the screen's
  ElementCounts counted, want_counts;
  count_elements<true, 8>(p, r, 0, 0, 1, 8, counted);
  for (const ElementCheck& x : e) want_counts.add(x);
  CHECK(counted.checked == want_counts.checked);
  CHECK(counted.bad == want_counts.bad);
  CHECK(want_counts.bad == 0);
}

TEST_CASE("row_kinds_of is row_kind for every source and token") {
  const Geometry g = custom_geometry(4, 64, 130, 6);
  int seen[3] = {};  // normal, masked, planted
  for (uint64_t index = 0; index < 300; ++index) {
    const Case c = random_case(0x50A7D5, index, 2 + static_cast<int>(index % 7), g);
    const OpGenerator gen(c, static_cast<int>(index % 2), static_cast<int>(index % 5));
    const std::vector<uint8_t> kinds = row_kinds_of(c, gen);
    REQUIRE(kinds.size() == static_cast<size_t>(c.dcp_size) * c.num_tokens);
    for (int s = 0; s < c.dcp_size; ++s) {
      for (int t = 0; t < c.num_tokens; ++t) {
        const auto want = static_cast<uint8_t>(gen.row_kind(s, t));
        REQUIRE_MESSAGE(kinds[static_cast<size_t>(s) * c.num_tokens + t] == want,
                        format_case_id(c), " source ", s, " token ", t);
        ++seen[want == static_cast<uint8_t>(LseRowKind::kNormal)   ? 0
               : want == static_cast<uint8_t>(LseRowKind::kMasked) ? 1
                                                                   : 2];
      }
    }
  }
  CHECK(seen[0] > 0);
  CHECK(seen[1] > 0);
  CHECK(seen[2] > 0);
}

TEST_CASE("the device's LSE stream is generate_source_lse, bit for bit") {
  const Geometry g = custom_geometry(4, 64, 40, 6);
  for (uint64_t index = 0; index < 60; ++index) {
    const Case c = random_case(0xDC9C36, index, 2 + static_cast<int>(index % 7), g);
    const OpGenerator gen(c, 0, 1);
    const std::vector<uint8_t> kinds = row_kinds_of(c, gen);
    const int src = static_cast<int>(index % static_cast<uint64_t>(c.dcp_size));
    const std::vector<uint8_t> want = generate_source_lse(gen, c, src);
    LseStream s = lse_stream_of(gen, c, src);
    s.kinds = kinds.data() + static_cast<size_t>(src) * c.num_tokens;
    const int bytes = s.format == 2 ? 4 : 2;
    std::vector<uint8_t> got(want.size());
    for (int t = 0; t < c.num_tokens; ++t) {
      for (int64_t j = 0; j < s.stride; ++j) {
        const uint32_t b = lse_stream_bits(s, t, j);
        std::memcpy(got.data() + (static_cast<size_t>(t) * s.stride + j) * bytes, &b, bytes);
      }
    }
    INFO(format_case_id(c));
    CHECK(got == want);
  }
}

TEST_CASE("a disagreement names both verdicts") {
  CallCheck a, b;
  a.num_checked = b.num_checked = 10;
  b.num_mismatches = 1;
  Mismatch m;
  m.token = 3;
  m.dim = 5;
  m.got = 1.5;
  m.want = 1.0;
  b.first_mismatches.push_back(m);
  const std::string s = checker_disagreement(a, 1, b, 1);
  CHECK(s.find("device: 10 checked, 0 mismatches") != std::string::npos);
  CHECK(s.find("cpu: 10 checked, 1 mismatches") != std::string::npos);
  CHECK(s.find("t=3 h=0 d=5 got 1.5 want 1") != std::string::npos);
  CHECK(checker_disagreement(a, 1, a, 2) != "");  // the digests too
  CHECK(checker_disagreement(a, 1, a, 1) == "");
}

TEST_CASE("exp2 and log2 are within about 2 ulp of the library's") {
  Rng rng(35);
  for (int i = 0; i < 200000; ++i) {
    const double x = -1080 * unit_double(rng.next());
    const double a = check_math::exp2(x), b = std::exp2(x);
    CHECK(std::fabs(a - b) <= 0x1p-51 * b + 0x1p-1073);  // 2 ulp, or 2 subnormal steps
    const double y = 1 + 15 * unit_double(rng.next());
    CHECK(std::fabs(check_math::log2(y) - std::log2(y)) <= 2 * 0x1p-52 * 4);
  }
  CHECK(check_math::exp2(0) == 1);
  CHECK(check_math::exp2(-1) == 0.5);
  CHECK(check_math::exp2(-check_math::inf()) == 0);
  CHECK(check_math::log2(1) == 0);
  CHECK(check_math::log2(8) == 3);
}

TEST_CASE("the audit samples about one call in 64, the same on every replay") {
  Case c;
  int audited = 0;
  for (int op = 0; op < 64000; ++op) audited += audited_call(c, 0, op, 64) ? 1 : 0;
  CHECK(audited > 850);
  CHECK(audited < 1150);
  CHECK(audited_call(c, 0, 17, 64) == audited_call(c, 0, 17, 64));
  CHECK(audited_call(c, 0, 3, 1));
}

}  // namespace
}  // namespace dcp
