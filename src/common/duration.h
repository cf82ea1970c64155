// Durations on the command line: `90s`, `10m`, `1h`, `1h30m`, `2.5m` or plain
// seconds (`45`). Used by `stress --duration`.
#pragma once

#include <string>
#include <string_view>

namespace dcp {

// Returns seconds (> 0). Throws UsageError with one clear line for anything
// else: empty, negative, zero, unknown unit, trailing junk, absurdly large.
double parse_duration_seconds(std::string_view text);

// "1h02m03s", "2m05s", "42s", "0.5s": for status lines and summaries.
std::string format_elapsed_s(double seconds);

}  // namespace dcp
