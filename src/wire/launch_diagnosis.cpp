#include "launch_diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <map>
#include <tuple>

namespace dcp {

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

namespace {

std::string text_of(const char* chars, size_t capacity) {
  return std::string(chars, strnlen(chars, capacity));
}

std::string stream_name(const LaunchRecord& r) {
  const std::string label = text_of(r.stream_label, sizeof r.stream_label);
  return label.empty() ? fmt::format("stream {}", r.stream_ordinal) : label;
}

double seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

// "combine_kernel<true> [2048 blocks x 128 threads, at most 512 resident on 32 SMs]".
std::string describe(const LaunchRecord& r) {
  std::string name = text_of(r.name, sizeof r.name);
  if (r.origin == LaunchOrigin::kGraph) return fmt::format("{} (a CUDA graph replay)", name);
  const uint64_t blocks = r.grid_blocks();
  const uint32_t threads = r.block[0] * r.block[1] * r.block[2];
  std::string where = fmt::format("{} [{} blocks x {} threads", name, blocks, threads);
  if (r.resident_blocks() >= 0) {
    where += fmt::format(", at most {} resident on {} SMs", r.resident_blocks(), r.usable_sms);
  }
  where += "]";
  if (r.origin == LaunchOrigin::kHarness) where += " (dcp-check)";
  return where;
}

// The ring's records of one case, oldest first.
std::vector<const LaunchRecord*> records_of_case(const LaunchTable& t, int case_index) {
  std::vector<const LaunchRecord*> out;
  for (const LaunchRecord& r : t.ring) {
    if (r.seq != 0 && r.case_index == case_index) out.push_back(&r);
  }
  std::sort(out.begin(), out.end(),
            [](const LaunchRecord* a, const LaunchRecord* b) { return a->seq < b->seq; });
  return out;
}

bool incomplete(const LaunchRecord& r) { return r.state == LaunchState::kLaunched; }

// A launch whose blocks cannot all be resident at once.
bool exceeds_residency(const LaunchRecord& r) {
  return r.resident_blocks() >= 0 && r.grid_blocks() > static_cast<uint64_t>(r.resident_blocks());
}

struct Incomplete {
  int rank;
  const LaunchRecord* record;
};

// One stream's line: the launches from the first incomplete one's op on (the
// stuck call), or a count when every launch of the case completed.
std::string stream_line(int rank, const std::vector<const LaunchRecord*>& launches,
                        int64_t now_ns) {
  const std::string head = fmt::format("rank {} {}:", rank, stream_name(*launches.front()));
  const auto first = std::find_if(launches.begin(), launches.end(),
                                   [](const LaunchRecord* r) { return incomplete(*r); });
  if (first == launches.end()) {
    return fmt::format("{} all {} launch(es) of the case completed (last {})", head,
                       launches.size(), describe(*launches.back()));
  }
  std::vector<std::string> parts;
  const int op = (*first)->op_idx;
  for (const LaunchRecord* r : launches) {
    if (r->op_idx != op && r->seq < (*first)->seq) continue;
    if (parts.size() == 8) {
      parts.push_back("...");
      break;
    }
    std::string state = r->state == LaunchState::kCompleted ? "completed"
                        : r->state == LaunchState::kCaptured
                            ? "captured"
                            : fmt::format("INCOMPLETE for {:.1f} s", seconds(now_ns - r->launched_ns));
    if (r == *first) state = "first " + state;
    parts.push_back(fmt::format("{} {}", describe(*r), state));
  }
  return fmt::format("{} op {}: {}", head, op, fmt::join(parts, " -> "));
}

// `open`: per stream, its incomplete launches in stream order (the first may
// be running; the rest are queued behind it).
std::string verdict_for(const std::vector<std::vector<Incomplete>>& open) {
  // A kernel of the kernel under test at the head of its stream, with more
  // blocks than can be resident at once, while kernels of it on other streams
  // (this rank's or a peer's, running or queued) have not completed.
  for (const std::vector<Incomplete>& stream : open) {
    const Incomplete& big = stream.front();
    const LaunchRecord& k = *big.record;
    if (k.origin != LaunchOrigin::kKernel || !exceeds_residency(k)) continue;
    std::vector<std::string> waiting;
    for (const std::vector<Incomplete>& other : open) {
      if (&other == &stream) continue;
      const auto first = std::find_if(other.begin(), other.end(), [](const Incomplete& o) {
        return o.record->origin != LaunchOrigin::kHarness;
      });
      if (first == other.end()) continue;
      std::string where = fmt::format("rank {}'s {}", first->rank, stream_name(*first->record));
      if (first != other.begin()) {
        where += fmt::format(" (queued behind {})",
                             short_kernel_name(text_of(other.front().record->name,
                                                       sizeof other.front().record->name)));
      }
      waiting.push_back(fmt::format(
          "{} on {}", short_kernel_name(text_of(first->record->name, sizeof first->record->name)),
          where));
    }
    if (waiting.empty()) continue;
    if (waiting.size() > 3) waiting.resize(3);
    return fmt::format(
        "forward-progress: rank {}'s {} on {} has {} blocks, but at most {} can be resident at "
        "once on the {} SMs it may use, while {} {} not completed: if its blocks wait for one "
        "of them (spinning blocks waiting on a peer's dispatch), the resident ones hold SMs "
        "that kernel needs and the rest never start, so progress depends on scheduling; here "
        "it stopped (a kernel must not assume its blocks, or another stream's kernels, are "
        "co-resident)",
        big.rank, short_kernel_name(text_of(k.name, sizeof k.name)), stream_name(k),
        k.grid_blocks(), k.resident_blocks(), k.usable_sms, fmt::join(waiting, "; "),
        waiting.size() > 1 ? "have" : "has");
  }
  return "";
}

}  // namespace

std::string short_kernel_name(const std::string& demangled) {
  std::string s = demangled;
  const std::string anonymous = "(anonymous namespace)::";
  for (size_t at = s.find(anonymous); at != std::string::npos; at = s.find(anonymous)) {
    s.erase(at, anonymous.size());
  }
  // Drop the parameter list: from the first '(' outside template arguments.
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0 && i > 0) {
      s.resize(i);
      break;
    }
  }
  // Drop a return type ("void ") and namespaces outside template arguments.
  depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (depth == 0 && s[i] == ' ') start = i + 1;
    if (depth == 0 && s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':') start = i + 2;
  }
  return s.substr(start);
}

std::string residency_warning(const LaunchRecord& r, int rank_sms) {
  if (r.blocks_per_sm < 0 || rank_sms <= 0) return "";
  const int64_t resident = int64_t{r.blocks_per_sm} * rank_sms;
  if (r.grid_blocks() <= static_cast<uint64_t>(resident)) return "";
  return fmt::format(
      "{} launches {} blocks of {} threads, but at most {} can be resident at once on the {} "
      "SMs a rank may use here: its blocks must not wait on peers, or progress depends on "
      "scheduling",
      short_kernel_name(text_of(r.name, sizeof r.name)), r.grid_blocks(),
      r.block[0] * r.block[1] * r.block[2], resident, rank_sms);
}

LaunchDiagnosis diagnose_launches(const std::vector<RankLaunches>& ranks, int case_index,
                                  int64_t now_ns) {
  LaunchDiagnosis d;
  std::vector<std::vector<Incomplete>> open;  // per stream with an incomplete launch
  std::vector<std::string> summary;
  int observed = 0;
  for (const RankLaunches& rl : ranks) {
    if (rl.table == nullptr || rl.table->state != ObserverState::kOn) {
      if (d.not_observed.empty() && rl.table != nullptr) {
        d.not_observed = text_of(rl.table->note, sizeof rl.table->note);
      }
      continue;
    }
    ++observed;
    const std::vector<const LaunchRecord*> launches = records_of_case(*rl.table, case_index);
    if (launches.empty()) {
      d.streams.push_back(fmt::format("rank {}: no launch observed in this case", rl.rank));
      continue;
    }
    std::map<uint32_t, std::vector<const LaunchRecord*>> by_stream;
    for (const LaunchRecord* r : launches) by_stream[r->stream_ordinal].push_back(r);
    const LaunchRecord* first_open = nullptr;
    for (const auto& [ordinal, list] : by_stream) {
      d.streams.push_back(stream_line(rl.rank, list, now_ns));
      std::vector<Incomplete> stuck;
      for (const LaunchRecord* r : list) {
        if (!incomplete(*r)) continue;
        stuck.push_back({rl.rank, r});
        if (r->origin != LaunchOrigin::kHarness && (first_open == nullptr || r->seq < first_open->seq))
          first_open = r;
      }
      if (!stuck.empty()) open.push_back(std::move(stuck));
    }
    if (!rl.answered) {
      d.streams.push_back(fmt::format(
          "rank {} did not answer the snapshot request: completions as last published", rl.rank));
    }
    if (first_open != nullptr) {
      summary.push_back(fmt::format("rank {}: {} ({}) incomplete for {:.1f} s", rl.rank,
                                    short_kernel_name(text_of(first_open->name, sizeof first_open->name)),
                                    stream_name(*first_open),
                                    seconds(now_ns - first_open->launched_ns)));
    } else {
      summary.push_back(fmt::format("rank {}: every kernel launch completed", rl.rank));
    }
  }
  if (observed == 0) {
    if (d.not_observed.empty()) d.not_observed = "no launch observation on this backend";
    d.streams.clear();
    return d;
  }
  d.not_observed.clear();
  d.verdict = verdict_for(open);
  d.summary = fmt::format("{}", fmt::join(summary, "; "));
  return d;
}

std::vector<std::string> control_dump_lines(const std::vector<RankLaunches>& ranks,
                                            int dcp_size) {
  // (group, context, name) -> per rank the dump.
  using Key = std::tuple<int, int, std::string>;
  std::map<Key, std::vector<std::pair<int, const ControlDump*>>> regions;
  for (const RankLaunches& rl : ranks) {
    if (rl.table == nullptr) continue;
    const int n = std::clamp(rl.table->num_control, 0, kMaxControlDumps);
    for (int i = 0; i < n; ++i) {
      const ControlDump& c = rl.table->control[i];
      if (dcp_size > 0 && c.dcp_size != dcp_size) continue;
      regions[{c.dcp_size, c.context, text_of(c.name, sizeof c.name)}].push_back({rl.rank, &c});
    }
  }
  std::vector<std::string> lines;
  for (const auto& [key, dumps] : regions) {
    const auto& [dcp, ctx, name] = key;
    std::string header =
        fmt::format("{} region '{}' (dcp{} context {}, {} bytes):",
                    dumps.front().second->local ? "local" : "control", name, dcp, ctx,
                    dumps.front().second->bytes);
    std::string ranks_text;
    for (const auto& [rank, dump] : dumps) {
      ranks_text += fmt::format(" | rank {}", rank);
      if (dump->status == 1) ranks_text += " (copy timed out)";
      if (dump->status == 2) ranks_text += " (copy failed)";
    }
    lines.push_back(header + ranks_text + "  [offset: u64 (u32 lo, u32 hi) per rank; * differs]");
    uint32_t bytes = 0;
    for (const auto& [rank, dump] : dumps) bytes = std::max(bytes, dump->dumped);
    int folded = 0;
    for (uint32_t off = 0; off < bytes; off += 8) {
      std::vector<uint64_t> values;
      for (const auto& [rank, dump] : dumps) {
        uint64_t v = 0;
        if (off < dump->dumped) std::memcpy(&v, dump->data + off, std::min<uint32_t>(8, dump->dumped - off));
        values.push_back(v);
      }
      const bool differ = std::any_of(values.begin(), values.end(),
                                      [&](uint64_t v) { return v != values.front(); });
      if (!differ && values.front() == 0) {
        ++folded;
        continue;
      }
      std::string row = fmt::format("  +0x{:04x}{}", off, differ ? " *" : "  ");
      for (uint64_t v : values) {
        row += fmt::format(" | {} ({}, {})", v, static_cast<uint32_t>(v),
                           static_cast<uint32_t>(v >> 32));
      }
      lines.push_back(row);
    }
    if (folded > 0) lines.push_back(fmt::format("  ({} all-zero rows equal on every rank)", folded));
    if (bytes < dumps.front().second->bytes) {
      lines.push_back(fmt::format("  (the first {} of {} bytes)", bytes, dumps.front().second->bytes));
    }
  }
  return lines;
}

}  // namespace dcp
