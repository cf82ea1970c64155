// gpu_check_agree: the device checker (check_call, compiled for the GPU)
// reaches the CPU checker's verdict on outputs broken the ways broken kernels
// break them, not just an element here and there: every element off by a few
// ulps, whole rows far off, a combined LSE in the wrong base, rows zeroed with
// a -inf LSE. The counts, the NaN count and the first mismatches must be the
// same bits (checker_disagreement), and every style must give calls where
// some elements pass and some fail (so tolerances are exercised at their
// edge, not only far from it). On a disagreement it bisects: the rows whose
// verdicts differ (each row broken alone), then the elements of the first
// such row (each alone), printing both checkers' got, want and tolerance
// (ulps), the host-compiled arithmetic's in hex, and the row's setup as the
// host computes it. Exit 77 (skipped, by name) without a GPU.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

#include "checker.h"
#include "device_check_launch.h"
#include "device_check_row.h"
#include "device_value_table.h"
#include "device_verdict.h"
#include "generator.h"
#include "geometry.h"
#include "gpu_test_prologue.h"
#include "mix.h"
#include "numeric.h"
#include "random_case.h"
#include "row_reference.h"

namespace {

using namespace dcp;

constexpr uint8_t kCanary = 0xA5;
constexpr size_t kGuard = 256;
constexpr int kStyles = 4;
const char* const kStyleNames[kStyles] = {"every element a few ulps off", "rows far off",
                                          "combined LSE in the wrong base",
                                          "rows zeroed, LSE -inf"};

bool ok(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return true;
  std::printf("FAIL: gpu_check_agree: %s: %s\n", what, cudaGetErrorString(err));
  return false;
}

// One call (case, group rank, op) on the device and on the CPU.
class Call {
 public:
  Call(const Case& c, int group_rank, int op, bool with_lse, const DeviceValueTable& table,
       const std::vector<uint16_t>& host_table)
      : c_(c), gen_(c, 0, op), rank_(group_rank), op_(op), with_lse_(with_lse) {
    kinds_ = row_kinds_of(c, gen_);
    p_ = device_check_params(c, gen_, group_rank);
    rows_ = p_.num_tokens * p_.heads;
    out_ = rounded_reference_output(c, 0, group_rank, op);
    RowReference r;
    for (int row = 0; row < rows_; ++row) {
      row_weights(c, gen_, row / p_.heads, group_rank * p_.heads + row % p_.heads, r);
      lse_.push_back(static_cast<float>(row_lse_bound(c, r.weights).want));
    }
    region_.guard_bytes = kGuard;
    region_.out_bytes = out_.size();
    region_.lse_bytes = with_lse ? lse_.size() * sizeof(float) : 0;
    scratch_bytes_ = DeviceCheckScratch::bytes(rows_, region_.out_bytes, region_.lse_bytes);
    good_ = ok(cudaMalloc(&region_.base, region_.total_bytes()), "malloc region") &&
            ok(cudaMalloc(&kinds_dev_, kinds_.size()), "malloc kinds") &&
            ok(cudaMalloc(&scratch_, scratch_bytes_), "malloc scratch") &&
            ok(cudaMallocHost(reinterpret_cast<void**>(&result_), sizeof *result_), "pinned") &&
            ok(cudaMemcpy(kinds_dev_, kinds_.data(), kinds_.size(), cudaMemcpyHostToDevice),
               "copy kinds");
    auto* base = static_cast<uint8_t*>(region_.base);
    p_.output = base + kGuard;
    p_.combined_lse =
        with_lse ? reinterpret_cast<const float*>(base + 2 * kGuard + region_.out_bytes) : nullptr;
    p_.row_kinds = static_cast<const uint8_t*>(kinds_dev_);
    p_.table = table.bits;
    host_p_ = p_;
    host_p_.row_kinds = kinds_.data();
    host_p_.table = host_table.data();
  }
  ~Call() {
    cudaFree(region_.base);
    cudaFree(kinds_dev_);
    cudaFree(scratch_);
    cudaFreeHost(result_);
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  bool good() const { return good_; }
  bool with_lse() const { return with_lse_; }
  int rows() const { return rows_; }
  int head_dim() const { return p_.head_dim; }
  const std::vector<uint8_t>& ref_out() const { return out_; }
  const std::vector<float>& ref_lse() const { return lse_; }

  // The device's verdict on (out, lse); false on a CUDA error.
  bool device(const std::vector<uint8_t>& out, const std::vector<float>& lse, CallCheck* got,
              DeviceCheckResult* raw = nullptr) {
    std::vector<uint8_t> host(region_.total_bytes(), kCanary);
    std::memcpy(host.data() + kGuard, out.data(), out.size());
    if (with_lse_) {
      std::memcpy(host.data() + 2 * kGuard + out.size(), lse.data(), lse.size() * sizeof(float));
    }
    result_->written = 0;
    if (!ok(cudaMemcpy(region_.base, host.data(), host.size(), cudaMemcpyHostToDevice), "copy") ||
        !ok(launch_device_check(p_, region_, kCanary, scratch_, scratch_bytes_, false, result_,
                                nullptr),
            "check") ||
        !ok(cudaDeviceSynchronize(), "check sync")) {
      return false;
    }
    if (result_->written != 1) {
      std::printf("FAIL: gpu_check_agree: the check completed without writing its result\n");
      return false;
    }
    *got = call_check_of(*result_, c_, rank_, op_);
    if (raw != nullptr) *raw = *result_;
    return true;
  }
  CallCheck cpu(const std::vector<uint8_t>& out, const std::vector<float>& lse) const {
    CheckProfile profile;
    profile.combined_lse = with_lse_;
    const std::span<const uint8_t> lse_bytes(reinterpret_cast<const uint8_t*>(lse.data()),
                                             with_lse_ ? lse.size() * sizeof(float) : 0);
    return check_call_output(c_, 0, rank_, rank_, op_, out, lse_bytes, profile);
  }
  // The host-compiled device arithmetic of one element (dim -1: the LSE,
  // only for a call with one), which CI holds to the CPU checker bit for bit.
  ElementCheck host_element(const std::vector<uint8_t>& out, const std::vector<float>& lse, int row,
                            int dim) {
    DeviceCheckParams q = host_p_;
    q.output = out.data();
    q.combined_lse = with_lse_ ? lse.data() : nullptr;
    CheckRow r;
    check_row_setup(q, row, r);
    if (dim < 0) return check_row_lse(q, r, row);
    return check_element(q, r, row, dim);
  }
  void print_row_setup(int row) const {
    CheckRow r;
    check_row_setup(host_p_, row, r);
    std::printf(
        "    row %d (token %d head %d) on the host: %d sources read, any %d, scale %a, "
        "lse want %a tol %a\n",
        row, row / p_.heads, row % p_.heads, r.count, r.any, r.scale, r.lse_want, r.lse_tol);
    for (int s = 0; s < p_.dcp_size; ++s) {
      std::printf("      source %d: kind %d, l2 %a\n", s,
                  kinds_[static_cast<size_t>(s * p_.num_tokens + row / p_.heads)],
                  source_l2(host_p_, row, s));
    }
    for (int j = 0; j < r.count; ++j) {
      std::printf("      read %d: weight %a, offset %u, scale_k %d\n", j, r.weight[j],
                  r.draw[j].offset, r.draw[j].scale_k);
    }
  }

 private:
  Case c_;
  OpGenerator gen_;
  int rank_, op_;
  bool with_lse_;
  std::vector<uint8_t> kinds_, out_;
  std::vector<float> lse_;
  DeviceCheckParams p_{}, host_p_{};
  int rows_ = 0;
  OutputRegion region_;
  void *kinds_dev_ = nullptr, *scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  DeviceCheckResult* result_ = nullptr;
  bool good_ = false;
};

// The reference broken in `style` (kStyleNames).
void break_call(const Case& c, int style, uint64_t key, std::vector<uint8_t>& out,
                std::vector<float>& lse) {
  const Format f = format_of(c.out_dtype);
  const size_t d = static_cast<size_t>(c.geometry.head_dim);
  Rng rng(key);
  for (size_t row = 0; row < lse.size(); ++row) {
    const bool far = style == 1 && rng.chance(0.3);
    const bool zero = style == 3 && rng.chance(0.2);
    for (size_t i = row * d; i < (row + 1) * d; ++i) {
      uint32_t b = read_bits(f, out.data(), i);
      if (zero) {
        b = 0;
      } else if (far) {
        b += static_cast<uint32_t>(rng.between(0, 80)) - 40u;
      } else if (style != 1) {
        b += static_cast<uint32_t>(rng.between(0, 6)) - 3u;
      }
      write_bits(f, out.data(), i, b & 0xFFFFu);
    }
    float& l = lse[row];
    if (zero) l = -INFINITY;
    if (style == 2) l = static_cast<float>(l * 1.4426950408889634);
    if (style == 1 && far) l += 0.25f;
  }
}

void print_element(const char* who, const CallCheck& v, const ElementCheck* host) {
  if (host != nullptr) {
    std::printf("      %s: got %a want %a tol %a -> %s\n", who, host->got, host->want, host->tol,
                host->pass ? "pass" : "mismatch");
    return;
  }
  if (v.first_mismatches.empty()) {
    std::printf("      %s: pass\n", who);
    return;
  }
  const Mismatch& m = v.first_mismatches[0];
  std::printf("      %s: got %a want %a (%g ulps, tolerance %g ulps) -> mismatch\n", who, m.got,
              m.want, m.err_ulps, m.tolerance_ulps);
}

// Which rows, then which elements of the first, the two checkers judge apart.
void bisect(Call& call, const std::vector<uint8_t>& out, const std::vector<float>& lse) {
  const size_t d = static_cast<size_t>(call.head_dim());
  int shown = 0, first_row = -1;
  for (int row = 0; row < call.rows() && shown < 4; ++row) {
    std::vector<uint8_t> o = call.ref_out();
    std::vector<float> l = call.ref_lse();
    const size_t at = 2 * d * static_cast<size_t>(row);
    std::memcpy(o.data() + at, out.data() + at, 2 * d);
    l[static_cast<size_t>(row)] = lse[static_cast<size_t>(row)];
    CallCheck dev;
    if (!call.device(o, l, &dev)) return;
    const CallCheck cpu = call.cpu(o, l);
    if (checker_disagreement(dev, 1, cpu, 1).empty()) continue;
    std::printf("    row %d alone: device %lld mismatches (%lld NaN), CPU %lld (%lld NaN)\n", row,
                static_cast<long long>(dev.num_mismatches), static_cast<long long>(dev.num_nan),
                static_cast<long long>(cpu.num_mismatches), static_cast<long long>(cpu.num_nan));
    if (first_row < 0) first_row = row;
    ++shown;
  }
  if (first_row < 0) {
    std::printf("    no row differs alone: the disagreement needs several rows at once\n");
    return;
  }
  call.print_row_setup(first_row);
  int elements = 0;
  for (int dim = call.with_lse() ? -1 : 0; dim < static_cast<int>(d) && elements < 6; ++dim) {
    std::vector<uint8_t> o = call.ref_out();
    std::vector<float> l = call.ref_lse();
    const size_t row = static_cast<size_t>(first_row);
    if (dim < 0) {
      l[row] = lse[row];
    } else {
      std::memcpy(o.data() + 2 * (d * row + static_cast<size_t>(dim)),
                  out.data() + 2 * (d * row + static_cast<size_t>(dim)), 2);
    }
    CallCheck dev;
    if (!call.device(o, l, &dev)) return;
    const CallCheck cpu = call.cpu(o, l);
    if (checker_disagreement(dev, 1, cpu, 1).empty()) continue;
    std::printf("    row %d dim %d alone:\n", first_row, dim);
    print_element("device", dev, nullptr);
    print_element("CPU", cpu, nullptr);
    const ElementCheck host = call.host_element(o, l, first_row, dim);
    print_element("host-compiled device arithmetic", cpu, &host);
    ++elements;
  }
}

}  // namespace

int main() {
  if (skip_without_gpu("gpu_check_agree")) return 77;
  DeviceValueTable table;
  std::vector<uint16_t> host_table(kDeviceValueTableSlots);
  if (!make_device_value_table("gpu_check_agree", &table) ||
      !ok(cudaMemcpy(host_table.data(), table.bits, host_table.size() * sizeof(uint16_t),
                     cudaMemcpyDeviceToHost),
          "copy table")) {
    return 1;
  }
  int calls = 0, disagree = 0, bisected = 0;
  int edge_calls[kStyles] = {};  // calls with elements passing and failing
  long long mismatches = 0;
  for (uint64_t index = 0; index < 48; ++index) {
    const int world = 2 + static_cast<int>(index % 7);
    const Geometry g = *find_geometry(index % 2 == 0 ? "kimi" : "tiny");
    const Case c = random_case(0xA9EE, index, world, g);
    if (!device_checkable(c, CheckProfile{})) continue;
    const int group_rank = static_cast<int>(index % static_cast<uint64_t>(c.dcp_size));
    const int op = static_cast<int>(index % 5);
    const bool with_lse = index % 3 != 2;
    Call call(c, group_rank, op, with_lse, table, host_table);
    if (!call.good()) return 1;
    for (int style = 0; style < kStyles; ++style) {
      std::vector<uint8_t> out = call.ref_out();
      std::vector<float> lse = call.ref_lse();
      break_call(c, style, hash_all(index, static_cast<uint64_t>(style)), out, lse);
      CallCheck dev;
      if (!call.device(out, lse, &dev)) return 1;
      const CallCheck cpu = call.cpu(out, lse);
      ++calls;
      mismatches += cpu.num_mismatches;
      if (cpu.num_mismatches > 0 && cpu.num_mismatches < cpu.num_checked) ++edge_calls[style];
      const std::string why = checker_disagreement(dev, 1, cpu, 1);
      if (why.empty()) continue;
      ++disagree;
      std::printf("FAIL: gpu_check_agree: %s rank %d op %d%s, %s: %.400s\n",
                  format_case_id(c).c_str(), group_rank, op, with_lse ? "" : " (no LSE)",
                  kStyleNames[style], why.c_str());
      if (bisected++ < 3) bisect(call, out, lse);
    }
  }
  bool vacuous = calls < 100;
  for (int style = 0; style < kStyles; ++style) {
    // 48 of 48 on the host's CPU checker for these seeds; far fewer means the
    // breakage no longer straddles the tolerances.
    if (edge_calls[style] >= 40) continue;
    std::printf(
        "FAIL: gpu_check_agree: %s: only %d calls with elements both passing and "
        "failing\n",
        kStyleNames[style], edge_calls[style]);
    vacuous = true;
  }
  if (disagree > 0 || vacuous) {
    std::printf("FAIL: gpu_check_agree: %d of %d broken calls judged apart\n", disagree, calls);
    return 1;
  }
  std::printf(
      "PASS: gpu_check_agree: %d broken calls (%lld mismatches in all), the device's "
      "verdict the CPU's on each\n",
      calls, mismatches);
  return 0;
}
