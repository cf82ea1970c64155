// Where one rank's time goes in a case: wall milliseconds per phase, summed
// over the case's calls (DCP_PHASE_CLOCK=cpu: the lapping thread's CPU
// milliseconds instead; see PhaseClock). The check of call k runs beside the
// launch and wait of call k + 1, so the phases can add up to more than the
// case's elapsed time; check_wait_ms is the part of the check the runner
// waited for.
#pragma once

namespace dcp {

// Milliseconds on a steady wall clock (differences only), and CPU time so
// far: of this process (every thread), of the calling thread.
double wall_ms();
double process_cpu_ms();
double thread_cpu_ms();

struct PhaseTimes {
  double generate_ms = 0;    // host input generation
  double stage_ms = 0;       // inputs into pinned staging (GPU)
  double launch_ms = 0;      // enqueueing producer, copies, the op or its graph replay;
                             // on the host backends the whole (synchronous) model call
  double setup_ms = 0;       // before and between a batch's calls (GPU): buffers sized, graphs
                             // looked up, SM pressure started, memory stress kicked
  double after_ms = 0;       // after a batch's sync (GPU): SM pressure stopped, payload tails
                             // and churn blocks checked
  double capture_ms = 0;     // graph capture and instantiation, and the churn after it
  double wait_ms = 0;        // blocked on the device (stream synchronisation)
  double collect_ms = 0;     // outputs out of staging
  double check_ms = 0;       // float64 check and output hash (beside the next call)
  double check_wait_ms = 0;  // waiting for a check to finish
  double barrier_ms = 0;     // group barriers and begin_case before the calls
  double idle_ms = 0;        // before the case: waiting for its message (the supervisor's
                             // pace) and for the previous case's finisher thread
  // Not a phase: the worker process's CPU time, every thread (its check pool
  // included), from the previous case's message to this one's. Summed over a
  // run it is the worker's CPU time; over the wall time, the cores it kept busy.
  double cpu_ms = 0;
  // Of cpu_ms, the worker's main thread's (the calls' host work, its waits
  // and barriers); the rest is its other threads' (the check pool, CUDA's
  // and CUPTI's).
  double main_cpu_ms = 0;

  PhaseTimes& operator+=(const PhaseTimes& o);
  PhaseTimes& operator/=(double n);  // a mean: every phase divided by n
};

// Every phase with its JSON name: the one list the operators, the JSON and
// the summaries iterate.
struct PhaseField {
  const char* json_name;
  double PhaseTimes::*ms;
};
inline constexpr PhaseField kPhaseFields[] = {
    {"generate_ms", &PhaseTimes::generate_ms}, {"stage_ms", &PhaseTimes::stage_ms},
    {"launch_ms", &PhaseTimes::launch_ms},     {"setup_ms", &PhaseTimes::setup_ms},
    {"after_ms", &PhaseTimes::after_ms},       {"capture_ms", &PhaseTimes::capture_ms},
    {"wait_ms", &PhaseTimes::wait_ms},
    {"collect_ms", &PhaseTimes::collect_ms},   {"check_ms", &PhaseTimes::check_ms},
    {"check_wait_ms", &PhaseTimes::check_wait_ms}, {"barrier_ms", &PhaseTimes::barrier_ms},
    {"idle_ms", &PhaseTimes::idle_ms},         {"cpu_ms", &PhaseTimes::cpu_ms},
    {"main_cpu_ms", &PhaseTimes::main_cpu_ms}};

inline PhaseTimes& PhaseTimes::operator+=(const PhaseTimes& o) {
  for (const PhaseField& f : kPhaseFields) this->*f.ms += o.*f.ms;
  return *this;
}

inline PhaseTimes& PhaseTimes::operator/=(double n) {
  for (const PhaseField& f : kPhaseFields) this->*f.ms /= n;
  return *this;
}

// Adds the time since the last lap (or construction) to a phase: wall time,
// or with DCP_PHASE_CLOCK=cpu (diagnosis only, read once per process) the
// calling thread's CPU time, so the phases say where a rank's host CPU goes
// (ci/gpu.sh perfdiag's phase-cpu run). A clock laps on the thread that made it.
class PhaseClock {
 public:
  PhaseClock() : last_(now_ms()) {}
  void lap(double& into) {
    const double now = now_ms();
    into += now - last_;
    last_ = now;
  }
  void restart() { last_ = now_ms(); }
  static bool counts_cpu();  // DCP_PHASE_CLOCK=cpu

 private:
  static double now_ms();
  double last_;
};

}  // namespace dcp
