#include "phase_times.h"

#include <time.h>

#include <chrono>
#include <cstdlib>
#include <string_view>

namespace dcp {
namespace {

double clock_ms(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

}  // namespace

double wall_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
double process_cpu_ms() { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }
double thread_cpu_ms() { return clock_ms(CLOCK_THREAD_CPUTIME_ID); }

bool PhaseClock::counts_cpu() {
  static const bool cpu = [] {
    const char* v = std::getenv("DCP_PHASE_CLOCK");
    return v != nullptr && std::string_view(v) == "cpu";
  }();
  return cpu;
}

double PhaseClock::now_ms() { return counts_cpu() ? thread_cpu_ms() : wall_ms(); }

}  // namespace dcp
