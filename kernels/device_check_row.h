// The device checker's row and element arithmetic (device_check.h), compiled
// for the device (device_check.cu) and the host (src/check/
// device_check_test.cpp compares it with the CPU checker bit for bit). Per
// row (token, head) it is the CPU checker's (checker.cpp, row_reference.cpp):
// the sources' LSEs as stored, their weights, the bound's scale and the
// combined LSE's reference and bound; per element the weighted sum from +0 in
// source order (one rounding per product and per sum), the tolerance and the
// test. C++17.
#pragma once

#include <cstdint>

#include "check_math.h"
#include "device_check.h"
#include "generator_formula.h"

namespace dcp {

struct CheckRow {
  int count = 0;  // sources with weight > 0, in source order
  double weight[kDeviceCheckMaxSources];
  RowDraw draw[kDeviceCheckMaxSources];
  bool any = false;  // some source contributes (else the row must be exactly zero)
  double scale = 0;  // check_math::bound_scale
  double lse_want = 0, lse_tol = 0;
};

// The head of `row` in the whole group: this rank owns heads [r*H, (r+1)*H).
DCP_HD int row_head(const DeviceCheckParams& p, int row) {
  return p.group_rank * p.heads + row % p.heads;
}

// A row's setup is per source, then for the whole row. Per source (on the
// device a lane each; the costly part): its LSE as stored in base 2
// (source_l2), then, once the largest l2 m is known, its weight term
// (source_term) and where its row reads the table (source_draw). Then
// check_row_finish, on every lane, from the W of each.

// Source s's LSE of `row` as stored, in base 2 (check_math::effective_l2).
DCP_HD double source_l2(const DeviceCheckParams& p, int row, int s) {
  const int t = row / p.heads;
  const auto kind = static_cast<LseRowKind>(p.row_kinds[s * p.num_tokens + t]);
  const double lse =
      lse_stored(p.lse_format, lse_formula(p.lse, p.lse_key[s], kind, s, t, row_head(p, row)));
  return check_math::effective_l2(lse, kind == LseRowKind::kMasked, p.base_e);
}

// Source l2's unnormalised weight against the row's largest l2 m (0 when
// every source is masked: m == -inf).
DCP_HD double source_term(double l2, double m) {
  return m > check_math::neg_inf() ? check_math::weight_term(l2, m) : 0;
}

// Where source s's row reads the value table.
DCP_HD RowDraw source_draw(const DeviceCheckParams& p, int row, int s) {
  const uint64_t wh = static_cast<uint64_t>(p.dcp_size) * static_cast<uint64_t>(p.heads);
  return row_draw(p.row_key[s], static_cast<uint64_t>(row / p.heads) * wh + row_head(p, row));
}

// The row's weights, bounds and combined LSE from every source's l2, term
// and draw ([dcp_size] each): check_math::combine_weights and combined_lse
// with the terms given (the same bits).
DCP_HD void check_row_finish(const DeviceCheckParams& p, const double* l2, const double* term,
                             const RowDraw* draw, CheckRow& r) {
  namespace cm = check_math;
  const int w = p.dcp_size;
  const double m = cm::max_l2_of(w, l2);
  double weight[kDeviceCheckMaxSources];
  double magnitude = 0;
  r.any = m > cm::neg_inf();
  if (r.any) {
    cm::combine_weights_from_terms(w, l2, m, term, weight, &magnitude);
  } else {
    for (int s = 0; s < w; ++s) weight[s] = 0;
  }
  r.scale = cm::bound_scale(w, magnitude);
  r.lse_want = cm::combined_lse_from_terms(w, l2, term, m, r.any, p.base_e);
  r.lse_tol = r.any ? cm::combined_lse_tolerance(r.lse_want, w, magnitude) : 0;
  r.count = 0;
  for (int s = 0; s < w; ++s) {
    if (!(weight[s] > 0)) continue;  // never read: may be NaN garbage
    r.weight[r.count] = weight[s];
    r.draw[r.count] = draw[s];
    ++r.count;
  }
}

// A row's setup, one source after another (the host's order; the device
// spreads the per-source parts over a warp's lanes and gets the same bits).
DCP_HD void check_row_setup(const DeviceCheckParams& p, int row, CheckRow& r) {
  double l2[kDeviceCheckMaxSources], term[kDeviceCheckMaxSources];
  RowDraw draw[kDeviceCheckMaxSources];
  for (int s = 0; s < p.dcp_size; ++s) l2[s] = source_l2(p, row, s);
  const double m = check_math::max_l2_of(p.dcp_size, l2);
  for (int s = 0; s < p.dcp_size; ++s) {
    term[s] = source_term(l2[s], m);
    draw[s] = source_draw(p, row, s);
  }
  check_row_finish(p, l2, term, draw, r);
}

struct ElementCheck {
  double got = 0, want = 0, tol = 0;
  bool pass = false;
};

// Element i (a flat [T, H, D] index) of the output as stored.
DCP_HD uint16_t output_bits(const DeviceCheckParams& p, size_t i) {
#if defined(__CUDA_ARCH__)
  return reinterpret_cast<const uint16_t*>(p.output)[i];  // the region is 256-byte aligned
#else
  return static_cast<uint16_t>(p.output[2 * i] | p.output[2 * i + 1] << 8);  // little-endian
#endif
}

// The weighted sums of N elements of a row (after check_row_setup), dims d0,
// d0 + step, ...: per element from +0 in source order, want += w x and, with
// kAbs, abs_sum += |w x| (w > 0, so |RN(w x)| is RN(w |x|), the CPU checker's
// term). Every source's N table reads are issued together (independent
// across elements): a warp waits on one table read per source and batch,
// not one per element. Dims past the row read the table only (any index is
// in it). kBf16: the output's format, fixed at compile time.
template <bool kBf16, int N, bool kAbs = true>
DCP_HD void element_sums(const DeviceCheckParams& p, const CheckRow& r, int d0, int step,
                         double* want, double* abs_sum) {
  namespace cm = check_math;
  DCP_UNROLL for (int k = 0; k < N; ++k) {
    want[k] = 0;
    if constexpr (kAbs) abs_sum[k] = 0;
  }
  for (int j = 0; j < r.count; ++j) {
    const RowDraw draw = r.draw[j];
    const double w = r.weight[j];
    const uint16_t* table = p.table + value_table_slot(kBf16, draw.scale_k, 0);
    uint16_t bits[N];  // value_table_value's bits
    DCP_UNROLL for (int k = 0; k < N; ++k) bits[k] = table[row_index(draw, d0 + k * step)];
    DCP_UNROLL for (int k = 0; k < N; ++k) {
      const double wx = cm::mul(w, cm::half_to_float(kBf16, bits[k]));
      want[k] = cm::add(want[k], wx);
      if constexpr (kAbs) abs_sum[k] = cm::add(abs_sum[k], cm::abs(wx));
    }
  }
}

// One element's test from its sums: the tolerance, then got against want.
template <bool kBf16>
DCP_HD ElementCheck element_verdict(const CheckRow& r, uint16_t got, double want, double abs_sum) {
  namespace cm = check_math;
  ElementCheck e;
  e.want = want;
  e.tol = r.any ? cm::element_tolerance(kBf16 ? 7 : 10, kBf16 ? 127 : 15, want, abs_sum, r.scale)
                : 0;
  e.got = cm::half_to_float(kBf16, got);
  e.pass = cm::element_passes(e.got, e.want, e.tol);
  return e;
}

// Elements d0, d0 + step, ..., n <= N of them, of `row` (after
// check_row_setup), each as the CPU checker does it: the weighted sum from +0
// in source order (one rounding per product and per sum), the tolerance and
// the test; element k's verdict handed to take(k, verdict). The same bits
// for any N (check_element is N = 1).
template <bool kBf16, int N, class Take>
DCP_HD void for_each_element(const DeviceCheckParams& p, const CheckRow& r, int row, int d0,
                             int step, int n, Take&& take) {
  const size_t row_at = static_cast<size_t>(row) * static_cast<size_t>(p.head_dim);
  double want[N], abs_sum[N];
  element_sums<kBf16, N>(p, r, d0, step, want, abs_sum);
  DCP_UNROLL for (int k = 0; k < N; ++k) {
    if (k >= n) break;
    take(k, element_verdict<kBf16>(r, output_bits(p, row_at + static_cast<size_t>(d0 + k * step)),
                                   want[k], abs_sum[k]));
  }
}
// Every verdict kept (the report, the host tests).
template <int N>
DCP_HD void check_elements(const DeviceCheckParams& p, const CheckRow& r, int row, int d0,
                           int step, int n, ElementCheck* e) {
  const auto keep = [e](int k, const ElementCheck& v) { e[k] = v; };
  if (p.out_format == 1) {
    for_each_element<true, N>(p, r, row, d0, step, n, keep);
  } else {
    for_each_element<false, N>(p, r, row, d0, step, n, keep);
  }
}

// Verdicts only counted (the kernel): checked, failed, NaN among the failed.
struct ElementCounts {
  unsigned long long checked = 0, bad = 0, nan = 0;
  DCP_HD void add(const ElementCheck& e) {
    ++checked;
    if (!e.pass) {
      ++bad;
      nan += check_math::is_nan(e.got) ? 1 : 0;
    }
  }
};
// Counted, screened first: the sums without |w x| (half the float64 adds and
// registers), each element tested against its tolerance with |want| for the
// |w x| sum. That is a lower bound of its tolerance (|want| <= abs_sum, as RN
// is monotone and odd, and element_tolerance grows with abs_sum), so an
// element that passes it passes. A batch with an element that does not
// (rare in a correct output: its error is mostly the final rounding, within
// half an ulp) is counted again exactly, an element at a time: the same
// verdicts as for_each_element's (device_check_test).
template <bool kBf16, int N>
DCP_HD void count_elements(const DeviceCheckParams& p, const CheckRow& r, int row, int d0,
                           int step, int n, ElementCounts& c) {
  const size_t row_at = static_cast<size_t>(row) * static_cast<size_t>(p.head_dim);
  double want[N];
  element_sums<kBf16, N, false>(p, r, d0, step, want, nullptr);
  bool sure = true;
  DCP_UNROLL for (int k = 0; k < N; ++k) {
    if (k >= n) break;
    const uint16_t got = output_bits(p, row_at + static_cast<size_t>(d0 + k * step));
    sure = sure && element_verdict<kBf16>(r, got, want[k], check_math::abs(want[k])).pass;
  }
  if (sure) {
    c.checked += static_cast<unsigned long long>(n);
    return;
  }
  for (int k = 0; k < n; ++k) {
    for_each_element<kBf16, 1>(p, r, row, d0 + k * step, step, 1,
                               [&c](int, const ElementCheck& e) { c.add(e); });
  }
}
// The device checker's batch: a lane checks dims d, d + 32, ..., d + 7 * 32
// of a row at once (two batches for a 512-wide row; more costs registers,
// hence blocks per SM).
constexpr int kCheckElementBatch = 8;

// Warps per row: a warp's work is a chain of dependent float64 operations,
// so latency bounds it; a call of few rows (small T) splits each row's dims
// over up to 4 warps to spread over more of them, never more than it has
// 32-dim slices. Part q of a row checks dims 32 q + lane, stepping by
// 32 * warps (check_row_part_dims).
DCP_HD int check_warps_per_row(int rows, int head_dim) {
  const int parts = rows >= 256 ? 1 : rows >= 64 ? 2 : 4;
  const int slices = (head_dim + 31) / 32;
  return parts < slices ? parts : slices < 1 ? 1 : slices;
}
// A lane's dims in part q of a row: first, first + step, ... < head_dim.
struct PartDims {
  int first = 0, step = 32;
};
DCP_HD PartDims check_row_part_dims(int warps_per_row, int part, int lane) {
  PartDims d;
  d.first = 32 * part + lane;
  d.step = 32 * warps_per_row;
  return d;
}
// How many of a lane's dims from `first` (stepping by `step`) one batch takes.
DCP_HD int check_batch_size(int head_dim, int first, int step) {
  const int left = (head_dim - first + step - 1) / step;
  return left < kCheckElementBatch ? left : kCheckElementBatch;
}

// Element d of `row` (after check_row_setup).
DCP_HD ElementCheck check_element(const DeviceCheckParams& p, const CheckRow& r, int row, int d) {
  ElementCheck e;
  check_elements<1>(p, r, row, d, 1, 1, &e);
  return e;
}

// The row's combined LSE (p.combined_lse non-null): an all-masked row must be
// exactly -inf, others within lse_tol.
DCP_HD ElementCheck check_row_lse(const DeviceCheckParams& p, const CheckRow& r, int row) {
  ElementCheck e;
  e.got = p.combined_lse[row];
  e.want = r.lse_want;
  e.tol = r.lse_tol;
  e.pass = r.any ? check_math::element_passes(e.got, e.want, e.tol) : e.got == e.want;
  return e;
}

// Appends element (row, dim) to the result's first mismatches (dim -1: the
// combined LSE), when there is room.
DCP_HD void report_mismatch(DeviceCheckResult& res, const DeviceCheckParams& p, int row, int dim,
                            const ElementCheck& e) {
  if (res.num_reported >= static_cast<uint32_t>(kDeviceCheckReported)) return;
  DeviceMismatch& m = res.first[res.num_reported++];
  m.token = row / p.heads;
  m.head = row % p.heads;
  m.dim = dim;
  m.got = e.got;
  m.want = e.want;
  m.tol = e.tol;
}

}  // namespace dcp
