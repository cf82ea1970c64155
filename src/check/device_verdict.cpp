#include "device_verdict.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "mix.h"
#include "numeric.h"

namespace dcp {

bool device_checkable(const Case& c, const CheckProfile& profile) {
  return !profile.upstream && c.dcp_size <= kDeviceCheckMaxSources &&
         (c.out_dtype == DType::kFp16 || c.out_dtype == DType::kBf16);
}

// gen.row_kind of every (source, token), token by token: the token's
// sequence and special draw once for all its sources (held equal to
// row_kind by device_check_test).
std::vector<uint8_t> row_kinds_of(const Case& c, const OpGenerator& gen) {
  const SequenceLayout& layout = gen.layout();
  const LseRecipe& recipe = gen.lse_recipe();
  const bool has_layout = !layout.query_start_loc.empty();
  std::vector<uint8_t> kinds(static_cast<size_t>(c.dcp_size) * c.num_tokens);
  for (int t = 0; t < c.num_tokens; ++t) {
    const int seq = has_layout ? layout.sequence_of(t) : -1;
    const bool special = lse_special_token(recipe, t);
    for (int s = 0; s < c.dcp_size; ++s) {
      const LseRowKind kind = has_layout && layout.masked(s, seq)
                                  ? LseRowKind::kMasked
                                  : lse_unmasked_kind(recipe, s, t, special);
      kinds[static_cast<size_t>(s) * c.num_tokens + t] = static_cast<uint8_t>(kind);
    }
  }
  return kinds;
}

DeviceCheckParams device_check_params(const Case& c, const OpGenerator& gen, int group_rank) {
  DeviceCheckParams p;
  p.num_tokens = c.num_tokens;
  p.heads = c.geometry.heads_per_rank;
  p.head_dim = c.geometry.head_dim;
  p.dcp_size = c.dcp_size;
  p.group_rank = group_rank;
  p.out_format = static_cast<int>(format_of(c.out_dtype));
  p.lse_format = static_cast<int>(format_of(c.lse_dtype));
  p.base_e = c.lse_base == LseBase::kE;
  p.lse = gen.lse_recipe();
  for (int s = 0; s < c.dcp_size; ++s) {
    p.lse_key[s] = gen.lse_key(s);
    p.row_key[s] = gen.row_key(s);
  }
  return p;
}

CallCheck call_check_of(const DeviceCheckResult& r, const Case& c, int global_rank, int op_idx) {
  CallCheck out;
  out.num_checked = static_cast<int64_t>(r.num_checked);
  out.num_mismatches = static_cast<int64_t>(r.num_mismatches);
  out.num_nan = static_cast<int64_t>(r.num_nan);
  for (uint32_t i = 0; i < r.num_reported && i < kDeviceCheckReported; ++i) {
    const DeviceMismatch& m = r.first[i];
    out.first_mismatches.push_back(
        mismatch_at(c, global_rank, op_idx, m.token, m.head, m.dim, m.got, m.want, m.tol));
  }
  return out;
}

namespace {

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

std::string verdict_text(const CallCheck& k, uint64_t digest) {
  std::string s = fmt::format("{} checked, {} mismatches ({} NaN), digest {:016x}", k.num_checked,
                              k.num_mismatches, k.num_nan, digest);
  for (const Mismatch& m : k.first_mismatches) {
    s += fmt::format("; t={} h={} d={} got {} want {}", m.token, m.head, m.dim, m.got, m.want);
  }
  return s;
}

}  // namespace

std::string checker_disagreement(const CallCheck& device, uint64_t device_digest,
                                 const CallCheck& cpu, uint64_t cpu_digest) {
  bool same = device.num_checked == cpu.num_checked &&
              device.num_mismatches == cpu.num_mismatches && device.num_nan == cpu.num_nan &&
              device.first_mismatches.size() == cpu.first_mismatches.size() &&
              device_digest == cpu_digest;
  for (size_t i = 0; same && i < cpu.first_mismatches.size(); ++i) {
    const Mismatch &a = device.first_mismatches[i], &b = cpu.first_mismatches[i];
    same = a.token == b.token && a.head == b.head && a.dim == b.dim && same_value(a.got, b.got) &&
           same_value(a.want, b.want);
  }
  if (same) return "";
  return fmt::format("the device checker and the CPU checker disagree: device: {} | cpu: {}",
                     verdict_text(device, device_digest), verdict_text(cpu, cpu_digest));
}

bool audited_call(const Case& c, int group_idx, int op_idx, int one_in) {
  if (one_in <= 1) return true;
  constexpr uint64_t kTagAudit = 0xDC9CA0D1;
  return hash_all(c.seed, kTagAudit, group_idx, op_idx) % static_cast<uint64_t>(one_in) == 0;
}

}  // namespace dcp
