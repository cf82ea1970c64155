#include "duration.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "errors.h"

namespace dcp {
namespace {

// A week: longer is surely a typo (e.g. seconds given where ms were meant).
constexpr double kMaxDurationSeconds = 7 * 24 * 3600.0;

double unit_seconds(char unit) {
  switch (unit) {
    case 's':
      return 1;
    case 'm':
      return 60;
    case 'h':
      return 3600;
    case 'd':
      return 86400;
    default:
      return 0;
  }
}

[[noreturn]] void bad_duration(std::string_view text, std::string_view why) {
  throw UsageError(fmt::format(
      "bad duration '{}': {} (use e.g. 90s, 10m, 1h, 1h30m, or plain seconds)", text, why));
}

}  // namespace

double parse_duration_seconds(std::string_view text) {
  if (text.empty()) bad_duration(text, "empty");
  const std::string s(text);
  double total = 0;
  size_t pos = 0;
  char last_unit = 0;
  while (pos < s.size()) {
    // A number: digits with at most one '.', no sign, no exponent.
    size_t end = pos;
    bool seen_dot = false;
    while (end < s.size() &&
           (std::isdigit(static_cast<unsigned char>(s[end])) || (s[end] == '.' && !seen_dot))) {
      seen_dot = seen_dot || s[end] == '.';
      ++end;
    }
    if (end == pos || (end == pos + 1 && s[pos] == '.')) {
      bad_duration(text, fmt::format("expected a number at '{}'", s.substr(pos)));
    }
    const double value = std::strtod(s.substr(pos, end - pos).c_str(), nullptr);
    if (end == s.size()) {
      // A bare number is seconds, but only on its own ("1h30" is ambiguous).
      if (pos != 0) bad_duration(text, "a number after a unit needs its own unit");
      total = value;
      pos = end;
      break;
    }
    const double scale = unit_seconds(s[end]);
    if (scale == 0) bad_duration(text, fmt::format("unknown unit '{}'", s[end]));
    if (last_unit != 0 && unit_seconds(last_unit) <= scale) {
      bad_duration(text, "units must go from largest to smallest, each once");
    }
    last_unit = s[end];
    total += value * scale;
    pos = end + 1;
  }
  if (!(total > 0)) bad_duration(text, "must be positive");
  if (!std::isfinite(total) || total > kMaxDurationSeconds) {
    bad_duration(text, "longer than a week");
  }
  return total;
}

std::string format_elapsed_s(double seconds) {
  if (seconds < 10) return fmt::format("{:.1f}s", seconds);
  const auto total = static_cast<long long>(seconds + 0.5);
  const long long h = total / 3600, m = (total / 60) % 60, sec = total % 60;
  if (h > 0) return fmt::format("{}h{:02}m{:02}s", h, m, sec);
  if (m > 0) return fmt::format("{}m{:02}s", m, sec);
  return fmt::format("{}s", sec);
}

}  // namespace dcp
