// What a session can run: the kernels' declarations and the session's facts
// that decide whether a case runs (the supervisor skips by this rule, and the
// suites are generated from it: SuiteOptions::skip_reason).
#pragma once

#include <string>
#include <vector>

#include "case.h"
#include "kernel_plugin.h"
#include "session_config.h"
#include "suites.h"

namespace dcp {

struct RunTarget {
  // The kernel under test, then the --against one if any.
  std::vector<KernelInfo> kernels = {default_kernel_info()};
  int world = 2;                 // a case's dcp size must divide it
  bool ranks_share_gpu = false;  // some GPU hosts more than one rank
  bool host_backend = false;     // no SMs: no SM pressure
  // pressure_unrunnable_reason(env): "" when SM-pressure cases can run.
  std::string pressure_unrunnable;
};

// Before the session starts: one GPU per rank assumed (`list` says so with
// --gpus); run_target(config, env) once the environment is known.
RunTarget run_target(const SessionConfig& config);
RunTarget run_target(const SessionConfig& config, const EnvironmentInfo& env);

// Why `c` cannot run on the target ("" when it can): the dcp size, the
// session's SM-pressure rules, then case_skip_reason for each kernel.
std::string run_skip_reason(const RunTarget& t, const Case& c);

// The rule as SuiteOptions takes it (holds a copy of `t`).
SkipReasonFn skip_reason_fn(const RunTarget& t);

}  // namespace dcp
