#include "failure.h"

#include <array>

namespace dcp {
namespace {

constexpr std::array<std::string_view, 16> kNames = {
    "sanitizer", "trap",          "cuda-error",    "kernel-error",
    "crash",     "out-of-bounds", "over-capacity", "nondeterministic",
    "hang",      "mismatch",      "nan",           "worker-died",
    "harness",   "usage",         "interrupted",   "none"};

}  // namespace

std::string_view to_string(FailureKind k) { return kNames.at(static_cast<size_t>(k)); }

std::optional<FailureKind> failure_kind_from_string(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<FailureKind>(i);
  }
  return std::nullopt;
}

bool is_kernel_failure(FailureKind k) { return k <= FailureKind::kNan; }

std::string_view error_class(FailureKind k) {
  switch (k) {
    case FailureKind::kNone:
    case FailureKind::kMismatch:
    case FailureKind::kNan:
      return "";
    case FailureKind::kUsage:
      return "usage";
    default:
      return is_kernel_failure(k) ? "kernel" : "harness";
  }
}

FailureKind headline(FailureKind a, FailureKind b) { return a < b ? a : b; }

}  // namespace dcp
