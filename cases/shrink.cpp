#include "shrink.h"

namespace dcp {

int64_t shrink_measure(const Case& c) {
  return int64_t{c.num_tokens} + c.num_calls + c.num_layers + (c.mode != ExecMode::kEager) +
         (c.out_pad_elems > 0) + (c.lse_pad_elems > 0) + (c.special != SpecialLse::kNone) +
         (c.skew ? 1 : 0) + c.num_slots + (c.epoch_start ? 1 : 0) + c.dcp_size +
         (c.empty != EmptyPattern::kNone);
}

std::vector<Case> shrink_candidates(const Case& c) {
  std::vector<Case> out;
  auto add = [&](auto&& change) {
    Case k = c;
    change(k);
    if (shrink_measure(k) < shrink_measure(c)) out.push_back(k);
  };
  // Fewer tokens: halve first (big steps), then one less.
  if (c.num_tokens > 1) {
    add([](Case& k) { k.num_tokens /= 2; });
    if (c.num_tokens - 1 != c.num_tokens / 2) add([](Case& k) { k.num_tokens -= 1; });
  }
  if (c.num_calls > 1) {
    add([](Case& k) { k.num_calls /= 2; });
    if (c.num_calls - 1 != c.num_calls / 2) add([](Case& k) { k.num_calls -= 1; });
  }
  if (c.num_layers > 1) {
    add([](Case& k) { k.num_layers = 1; });
    if (c.num_layers > 2) add([](Case& k) { k.num_layers -= 1; });
  }
  if (c.mode != ExecMode::kEager) add([](Case& k) { k.mode = ExecMode::kEager; });
  if (c.out_pad_elems > 0 && c.lse_pad_elems > 0) {
    add([](Case& k) { k.out_pad_elems = k.lse_pad_elems = 0; });
  }
  if (c.out_pad_elems > 0) add([](Case& k) { k.out_pad_elems = 0; });
  if (c.lse_pad_elems > 0) add([](Case& k) { k.lse_pad_elems = 0; });
  if (c.special != SpecialLse::kNone) add([](Case& k) { k.special = SpecialLse::kNone; });
  if (c.skew) add([](Case& k) { k.skew = false; });
  if (c.num_slots > 1) add([](Case& k) { k.num_slots = 1; });
  if (c.epoch_start) add([](Case& k) { k.epoch_start.reset(); });
  // Smaller group: the largest proper divisor >= 2 (it still divides the world).
  for (int p = 2; p * p <= c.dcp_size || p == c.dcp_size; ++p) {
    if (c.dcp_size % p == 0) {
      if (c.dcp_size / p >= 2) add([p](Case& k) { k.dcp_size /= p; });
      break;
    }
  }
  if (c.empty != EmptyPattern::kNone) add([](Case& k) { k.empty = EmptyPattern::kNone; });
  return out;
}

}  // namespace dcp
