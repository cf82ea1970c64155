// Running one case across every worker, and the verdicts: pass/fail from the
// ranks' checks, or an error with a diagnosis when a rank hangs, crashes,
// traps or reports a fault. After an error the session is dead: the workers
// are killed at once (their protocol state is unknown) and later cases skip.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "errors.h"
#include "plan.h"
#include "pressure_rule.h"
#include "supervisor_impl.h"
#include "worker_protocol.h"

namespace dcp {
namespace {

using nlohmann::json;

double seconds_since(SupervisorClock::time_point t) {
  return std::chrono::duration<double>(SupervisorClock::now() - t).count();
}

std::string summarize_failures(const std::vector<RankCaseResult>& ranks) {
  int64_t mismatches = 0, nans = 0, checked = 0;
  std::vector<int> failing;
  const Mismatch* first = nullptr;
  for (const RankCaseResult& r : ranks) {
    mismatches += r.num_mismatches;
    nans += r.num_nan;
    checked += r.num_checked;
    if (!r.passed) failing.push_back(r.rank);
    if (first == nullptr && !r.first_mismatches.empty()) first = &r.first_mismatches.front();
  }
  std::string msg = fmt::format("{} of {} elements wrong ({} NaN) on ranks {}", mismatches, checked,
                                nans, fmt::join(failing, ","));
  if (first != nullptr) {
    msg += fmt::format(
        "; first: rank {} op {} token {} head {} dim {}: got {:.9g}, want {:.9g} ({:.3g} ulp, "
        "tolerance {:.3g})",
        first->rank, first->op_idx, first->token, first->head, first->dim, first->got, first->want,
        first->err_ulps, first->tolerance_ulps);
    if (!first->likely_source.empty()) msg += fmt::format(", likely {}", first->likely_source);
  } else if (mismatches == 0) {
    msg += ": no element was checked";
  }
  return msg;
}

// A graph set's calls differ in T: the first mismatch's call says which.
std::string graph_set_note(const Case& c, const std::vector<RankCaseResult>& ranks) {
  if (c.mode != ExecMode::kGraphSet) return "";
  for (const RankCaseResult& r : ranks) {
    if (r.first_mismatches.empty()) continue;
    const int op = r.first_mismatches.front().op_idx;
    return fmt::format("; op {} replayed the graph set's T={} graph", op, tokens_of_op(c, op));
  }
  return "";
}

// Distinct errors, in rank order, at most three (the ranks keep all of them).
std::string join_errors(const std::vector<std::string>& errors) {
  std::vector<std::string> distinct;
  for (const std::string& e : errors) {
    if (std::find(distinct.begin(), distinct.end(), e) == distinct.end()) distinct.push_back(e);
  }
  std::string out;
  for (size_t i = 0; i < distinct.size() && i < 3; ++i) out += (i ? "; " : "") + distinct[i];
  if (distinct.size() > 3) out += fmt::format("; and {} more", distinct.size() - 3);
  return out;
}

// "op 3", or where a rank stood before its first heartbeat of the case.
std::string op_text(int last_op) {
  return last_op < 0 ? std::string("before its first op") : fmt::format("after op {}", last_op);
}

// What an init-fault case did to which rank, for a hang's note.
std::string init_fault_note(const Case& c) {
  if (c.init_fault == InitFault::kNone) return "";
  const int culprit = init_fault_rank(c);
  if (c.init_fault == InitFault::kFail) {
    return fmt::format("; dcp-check failed group rank {}'s init in this case (initfail): the "
                       "other ranks' inits must return",
                       culprit);
  }
  return fmt::format("; dcp-check delayed group rank {}'s init by {} ms in this case (initlate)",
                     culprit, c.init_late_ms);
}

// The wait lines, or "" when no rank was waiting on a flag.
std::string waits_text(const std::vector<std::string>& waits) {
  if (waits.size() == 1 && waits[0] == "no rank was waiting on a flag") return "";
  return fmt::format("{}", fmt::join(waits, "; "));
}

}  // namespace

CaseResult Session::Impl::finish_failed_case(CaseResult r, const Case& c, const CaseFailure& f) {
  // The board first: killing does not change it, but the diagnosis must be what
  // the ranks published while stuck.
  const std::vector<std::string> waits = diagnose_current_waits(c);
  // A hang seen from outside the kernel: what each rank's process launched and
  // what completed (the observer answers while its worker is stuck).
  LaunchDiagnosis seen;
  if (f.hang) {
    const std::vector<RankLaunches> launches = launch_snapshots();
    seen = diagnose_launches(launches, current_case_index, monotonic_ns());
    r.diagnosis = seen.streams;
    if (!seen.verdict.empty()) r.diagnosis.push_back(seen.verdict);
    for (std::string& line : control_dump_lines(launches, c.dcp_size)) {
      r.diagnosis.push_back(std::move(line));
    }
  }
  kill_workers();
  for (WorkerState& w : workers) {
    if (w.result) {
      r.ranks.push_back(*w.result);
      continue;
    }
    RankCaseResult missing;
    missing.case_id = r.case_id;
    missing.rank = w.rank;
    missing.failure = f.kind;
    missing.error = w.rank == f.culprit
                        ? f.culprit_note
                        : fmt::format("no result ({}); torn down: {}", op_text(w.last_op), f.cause);
    r.ranks.push_back(std::move(missing));
  }
  for (const RankCaseResult& rr : r.ranks) r.elapsed_ms = std::max(r.elapsed_ms, rr.elapsed_ms);
  r.status = CaseStatus::kError;
  r.failure = case_failure(r.ranks);
  // A hang leads with who waits on whom; other failures with their cause.
  std::string who_waits = waits_text(waits);
  if (who_waits.empty() && f.hang && !config.kernel.has(DCP_CAP_WAIT_STATUS)) {
    // No wait status: the launches say which kernel each rank is stuck in.
    who_waits = seen.not_observed.empty()
                    ? seen.summary
                    : fmt::format(
                          "kernel '{}' publishes no wait status (capability wait-status), so "
                          "who waits on whom is unknown; {}",
                          config.kernel.name, seen.not_observed);
  }
  if (!seen.verdict.empty()) {
    who_waits = who_waits.empty() ? seen.verdict : who_waits + " | " + seen.verdict;
  }
  if (who_waits.empty()) {
    r.message = f.cause;
  } else if (f.hang) {
    r.message = fmt::format("hang: {} | {}", who_waits, f.cause);
  } else {
    r.message = fmt::format("{} | {}", f.cause, who_waits);
  }
  dead = true;
  dead_reason = fmt::format("the session ended at case {}: {}", r.case_id, f.cause);
  return r;
}

CaseResult Session::Impl::finish_case(CaseResult r, const Case& c) {
  std::vector<std::string> errors;
  for (WorkerState& w : workers) {
    r.ranks.push_back(*w.result);
    r.elapsed_ms = std::max(r.elapsed_ms, w.result->elapsed_ms);
    if (!w.result->error.empty()) {
      errors.push_back(fmt::format("rank {}: {}", w.rank, w.result->error));
    }
  }
  if (!errors.empty()) {
    // The workspace state is unknown after a fault: no later case may trust it.
    const std::vector<std::string> waits = diagnose_current_waits(c);
    kill_workers();
    r.status = CaseStatus::kError;
    r.failure = case_failure(r.ranks);
    const std::string who_waits = waits_text(waits);
    r.message = who_waits.empty() ? join_errors(errors)
                                  : fmt::format("{} | {}", join_errors(errors), who_waits);
    dead = true;
    dead_reason = fmt::format("the session ended at case {}: {}", r.case_id, errors.front());
    return r;
  }
  const bool passed = std::all_of(r.ranks.begin(), r.ranks.end(),
                                  [](const RankCaseResult& rr) { return rr.passed; });
  r.status = passed ? CaseStatus::kPass : CaseStatus::kFail;
  r.failure = passed ? FailureKind::kNone : case_failure(r.ranks);
  if (!passed) {
    r.message = summarize_failures(r.ranks) + graph_set_note(c, r.ranks);
  } else if (!r.ranks.empty() && !r.ranks.front().note.empty()) {
    r.message = fmt::format("every rank: {}", r.ranks.front().note);
  } else if (config.backend == BackendKind::kHost && uses_graphs(c.mode)) {
    r.message = "host backend: CUDA graph replays are modelled as eager calls";
  }
  return r;
}

// The first reason the case in progress cannot finish normally, if any.
std::optional<CaseFailure> Session::Impl::find_failure(
    const Case& c, std::optional<SupervisorClock::time_point>& first_error) {
  const std::string id = format_case_id(c);
  if (interrupted()) {
    return CaseFailure{
        fmt::format("interrupted by {} during case {}", signal_name(interrupt_signal()), id),
        FailureKind::kInterrupted, -1, ""};
  }
  for (WorkerState& w : workers) {
    const bool failed = !w.fatal_message.empty() || w.lost();
    if (failed && !w.result && w.started_index > current_case_index) {
      return CaseFailure{fmt::format("rank {} failed in a later case (sent ahead) before it sent "
                                     "this one's result",
                                     w.rank),
                         FailureKind::kNone, w.rank, "", false, /*in_later_case=*/true};
    }
  }
  for (WorkerState& w : workers) {
    if (w.fatal_message.empty()) continue;
    const bool kernel = is_kernel_failure(w.fatal_kind);
    std::string cause = fmt::format("rank {} reported a {} fault in case {}: {}", w.rank,
                                    kernel ? "kernel" : "harness", id, w.fatal_message);
    return CaseFailure{cause, kernel ? w.fatal_kind : FailureKind::kHarness, w.rank,
                       w.fatal_message};
  }
  for (WorkerState& w : workers) {
    if (!w.lost()) continue;
    if (!w.exit) w.exit = wait_for_exit(w.pid, 1.0);  // closed its socket: learn how it ended
    const std::string how = w.exit ? w.exit->describe() : "closed its connection";
    if (in_kernel(w.rank)) {  // it died inside the kernel under test: the kernel's failure
      std::string note =
          fmt::format("rank {} (pid {}) {} inside kernel '{}' during case {} ({})", w.rank, w.pid,
                      how, config.kernel.name, id, op_text(w.last_op));
      return CaseFailure{note, FailureKind::kCrash, w.rank, note};
    }
    std::string note = fmt::format("rank {} (pid {}) {} during case {} ({})", w.rank, w.pid, how,
                                   id, op_text(w.last_op));
    return CaseFailure{note, FailureKind::kWorkerDied, w.rank, note};
  }
  const auto now = SupervisorClock::now();
  const bool any_error = std::any_of(workers.begin(), workers.end(), [](const WorkerState& w) {
    return w.result && !w.result->error.empty();
  });
  if (any_error && !first_error) first_error = now;
  // A late init (initlate) keeps every rank of the group silent that long.
  const double deadline_s = effective_timeout_s(config) + kDeadlineGraceS +
                            (c.init_fault == InitFault::kLate ? c.init_late_ms / 1000.0 : 0.0);
  for (WorkerState& w : workers) {
    if (w.result) continue;
    const double silent_s = seconds_since(w.last_activity);
    const double error_grace_s =
        config.sanitize_tool.empty() ? kErrorGraceS : kErrorGraceS * kSanitizedTimeoutScale;
    const bool errored_peers = first_error && seconds_since(*first_error) > error_grace_s;
    if (silent_s <= deadline_s && !errored_peers) continue;
    std::string note = fmt::format("rank {} made no progress for {:.1f} s ({}){}{}", w.rank,
                                   silent_s, op_text(w.last_op), inside_kernel_note(),
                                   init_fault_note(c));
    std::string cause =
        errored_peers
            ? fmt::format("{}; no result {:.1f} s after a peer reported a fault", note,
                          seconds_since(*first_error))
            : fmt::format("hang: {}; per-call deadline --timeout {} s{} + {} s grace", note,
                          config.timeout_s,
                          config.sanitize_tool.empty()
                              ? ""
                              : fmt::format(" x{} under --sanitize", kSanitizedTimeoutScale),
                          kDeadlineGraceS);
    return CaseFailure{cause, FailureKind::kHang, w.rank, note, /*hang=*/true};
  }
  return std::nullopt;
}

std::string Session::Impl::skip_reason(const Case& c) const {
  return run_skip_reason(target, c);
}

void Session::Impl::send_case(const std::string& id, int index) {
  for (WorkerState& w : workers) {
    if (w.lost()) continue;  // reported by find_failure
    try {
      w.channel->send({{"type", "case"}, {"index", index}, {"id", id}}, 2.0);
    } catch (const std::exception&) {
      w.channel->close();
    }
  }
}

SentAhead* Session::Impl::sent_ahead(int index) {
  for (SentAhead& a : ahead) {
    if (a.index == index) return &a;
  }
  return nullptr;
}

// The case `index` becomes the one in progress; when it was sent ahead (the
// front of `ahead`), what its ranks already reported moves over.
void Session::Impl::make_current(int index) {
  const bool was_ahead = !ahead.empty() && ahead.front().index == index;
  current_case_index = index;
  for (WorkerState& w : workers) {
    w.result = was_ahead ? std::move(ahead.front().results[w.rank]) : std::nullopt;
    w.last_op = was_ahead ? ahead.front().last_ops[w.rank] : -1;
    w.last_activity = SupervisorClock::now();
  }
  if (was_ahead) ahead.pop_front();
}

// Sends the upcoming cases not sent yet, in order, after those already sent
// (which must be their first ones; a case that would be skipped is not sent).
void Session::Impl::send_ahead(const std::vector<Case>& upcoming) {
  size_t matched = 0;
  for (const Case& u : upcoming) {
    if (!skip_reason(u).empty()) continue;
    const std::string id = format_case_id(u);
    if (matched < ahead.size()) {
      if (ahead[matched].id != id) return;  // another order: run_case drains when it comes
      ++matched;
      continue;
    }
    SentAhead a{u, id, next_case_index++, {}, {}};
    a.results.resize(workers.size());
    a.last_ops.assign(workers.size(), -1);
    send_case(a.id, a.index);
    ahead.push_back(std::move(a));
    ++matched;
  }
}

CaseResult Session::Impl::await_case(CaseResult r, const Case& c) {
  std::optional<SupervisorClock::time_point> first_error;
  CaseResult out;
  while (true) {
    poll_workers(50);
    if (std::all_of(workers.begin(), workers.end(),
                    [](const WorkerState& w) { return w.result.has_value(); })) {
      out = finish_case(std::move(r), c);
      break;
    }
    if (auto failure = find_failure(c, first_error)) {
      if (failure->in_later_case) {
        // Not judged: the later case, current next, reports the failure.
        for (WorkerState& w : workers) {
          if (w.result) r.ranks.push_back(*w.result);
        }
        r.status = CaseStatus::kSkipped;
        r.message = fmt::format("not checked to the end: {}; that case reports it", failure->cause);
        out = std::move(r);
        break;
      }
      out = finish_failed_case(std::move(r), c, *failure);
      break;
    }
  }
  if (dead) ahead.clear();  // the workers are gone, and with them the cases sent ahead
  return out;
}

void Session::Impl::drain_sent_ahead(const Case* keep) {
  const std::string keep_id = keep != nullptr ? format_case_id(*keep) : "";
  const bool kept = std::any_of(ahead.begin(), ahead.end(),
                                [&](const SentAhead& a) { return a.id == keep_id; });
  while (!ahead.empty() && !dead && !(kept && ahead.front().id == keep_id)) {
    const SentAhead a = ahead.front();
    make_current(a.index);
    CaseResult r;
    r.case_id = a.id;
    (void)await_case(std::move(r), a.scenario);
  }
}

CaseResult Session::Impl::run_case(const Case& c, const std::string& suite,
                                   const std::vector<Case>& upcoming) {
  CaseResult r;
  r.case_id = format_case_id(c);
  r.scenario = c;
  r.suite = suite;
  r.replay = replay_line_for(config, c);
  if (!dead && interrupted()) {
    kill_workers();
    dead = true;
    dead_reason = fmt::format("interrupted by {}", signal_name(interrupt_signal()));
    ahead.clear();
  }
  if (dead) {
    r.status = CaseStatus::kSkipped;
    r.message = "not run: " + dead_reason;
    return r;
  }
  if (std::string why = skip_reason(c); !why.empty()) {  // never sent ahead either
    r.status = CaseStatus::kSkipped;
    r.message = why;
    return r;
  }
  drain_sent_ahead(&c);
  if (dead) {
    r.status = CaseStatus::kSkipped;
    r.message = "not run: " + dead_reason;
    return r;
  }
  if (!ahead.empty()) {  // its front is this case (drain_sent_ahead kept it)
    make_current(ahead.front().index);
  } else {
    make_current(next_case_index++);
    send_case(r.case_id, current_case_index);
  }
  send_ahead(upcoming);
  return await_case(std::move(r), c);
}

}  // namespace dcp
