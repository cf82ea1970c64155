#include "sanitizer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "supervisor_process.h"

namespace dcp {
namespace {

constexpr std::string_view kPrefix = "=========";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// One "=========" line: whether it is top level (one space of indent, a
// headline or summary), a record's detail line, or a bare separator.
struct ReportLine {
  bool ours = false;  // starts with the sanitizer's prefix
  bool separator = false;
  bool top = false;
  std::string_view content;
};

ReportLine classify(std::string_view line) {
  ReportLine l;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.starts_with(kPrefix)) return l;
  l.ours = true;
  std::string_view rest = line.substr(kPrefix.size());
  size_t indent = 0;
  while (indent < rest.size() && rest[indent] == ' ') ++indent;
  l.content = trim(rest);
  l.separator = l.content.empty();
  l.top = !l.separator && indent <= 1;
  return l;
}

// "... of size 4 bytes" -> 4
int size_in(std::string_view s) {
  const size_t at = s.find("of size ");
  if (at == std::string_view::npos) return 0;
  return std::atoi(std::string(s.substr(at + 8)).c_str());
}

// The headline's access: "Invalid __global__ read of size 4" -> "read".
std::string access_in(std::string_view s) {
  for (std::string_view a : {"read", "write", "atomic"}) {
    if (s.find(fmt::format(" {} ", a)) != std::string_view::npos ||
        s.ends_with(fmt::format(" {}", a))) {
      return std::string(a);
    }
  }
  return "";
}

// Starts a finding when `content` is an error headline, with its tool's kind.
std::optional<SanitizerFinding> record_headline(std::string_view content, const std::string& tool) {
  SanitizerFinding f;
  f.tool = tool;
  f.kind = std::string(content);
  if (content.starts_with("Invalid ") || content.starts_with("Uninitialized ") ||
      content.starts_with("Misaligned ") || content.starts_with("Out-of-range ")) {
    f.access = access_in(content);
    f.access_size = size_in(content);
    return f;
  }
  if (content.find("Race reported between") != std::string_view::npos) {
    f.access = "race";
    return f;
  }
  if (content.starts_with("Barrier error")) {
    f.access = "barrier";
    return f;
  }
  if (content.starts_with("Program hit ")) {
    f.access = "api";
    return f;
  }
  for (std::string_view p : {"Malloc", "Free", "Hardware exception", "Illegal ", "Leaked ", "Cuda ",
                             "Device-side ", "Unused memory"}) {
    if (content.starts_with(p)) return f;
  }
  return std::nullopt;
}

// "at K+0x1a0 in f.cu:41", "at K+0x1a0", "at 0x34 in f.cu:7:K", "at 0x34 in K".
void parse_at(std::string_view where, SanitizerFinding& f) {
  const size_t in = where.find(" in ");
  std::string_view head = where.substr(0, in);
  std::string_view tail = in == std::string_view::npos ? std::string_view() : where.substr(in + 4);
  if (head.starts_with("0x")) {  // the older layout: the kernel after file:line
    const size_t c1 = tail.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : tail.find(':', c1 + 1);
    if (c2 != std::string_view::npos) {
      f.location = std::string(tail.substr(0, c2));
      f.kernel = std::string(tail.substr(c2 + 1));
    } else {
      f.kernel = std::string(tail);
    }
    return;
  }
  const size_t plus = head.rfind("+0x");
  f.kernel = std::string(plus == std::string_view::npos ? head : head.substr(0, plus));
  // A racecheck second line may end with " [248 hazards]".
  if (const size_t br = tail.find(" ["); br != std::string_view::npos) tail = tail.substr(0, br);
  f.location = std::string(trim(tail));
}

// A detail line of the record `f`.
void detail(std::string_view content, SanitizerFinding& f) {
  if (content.starts_with("at ") && f.kernel.empty()) {
    parse_at(content.substr(3), f);
  } else if (content.starts_with("by thread ")) {
    // "by thread (0,0,0) in block (3,0,0)"
    const size_t in = content.find(" in block ");
    f.thread = std::string(
        trim(content.substr(10, in == std::string_view::npos ? content.npos : in - 10)));
    if (in != std::string_view::npos) f.block = std::string(trim(content.substr(in + 10)));
  } else if (content.starts_with("Address ") || content.starts_with("Access to ")) {
    // "Address 0x... is out of bounds" (older), "Access to 0x... is out of bounds"
    // (CUDA 13's compute-sanitizer, seen on the H100).
    std::string_view rest = content.substr(content.starts_with("Address ") ? 8 : 10);
    const size_t sp = rest.find(' ');
    f.address = std::string(rest.substr(0, sp));
    if (sp != std::string_view::npos) f.address_note = std::string(trim(rest.substr(sp + 1)));
  } else if (content.starts_with("and is ") && !f.address.empty()) {
    f.address_note += fmt::format(" ({})", content.substr(4));
  } else if (content.starts_with("and ") && f.access == "race") {
    f.kind += fmt::format(" / {}", content.substr(4));
  }
}

struct Parsed {
  std::vector<SanitizerFinding> findings;
  int summary_errors = -1;
};

Parsed parse(std::string_view text, const std::string& tool, int rank) {
  Parsed out;
  // The record being read is out.findings.back() while `open`.
  bool open = false;
  auto close = [&] { open = false; };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const ReportLine l = classify(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (!l.ours) continue;
    if (l.separator) {
      close();
      continue;
    }
    if (l.top) {
      close();
      if (l.content.starts_with("ERROR SUMMARY: ")) {
        out.summary_errors = std::atoi(std::string(l.content.substr(15)).c_str());
        continue;
      }
      if (std::optional<SanitizerFinding> f = record_headline(l.content, tool)) {
        f->rank = rank;
        // racecheck names the kernel in the headline itself.
        if (const size_t at = l.content.find(" access at "); at != std::string_view::npos) {
          parse_at(l.content.substr(at + 11), *f);
        }
        out.findings.push_back(std::move(*f));
        open = true;
      }
      continue;
    }
    if (open) detail(l.content, out.findings.back());
  }
  return out;
}

SanitizerFinding unparsed_finding(const std::string& tool, int rank, int counted, int parsed) {
  SanitizerFinding f;
  f.tool = tool;
  f.rank = rank;
  f.kind = parsed == 0 ? fmt::format(
                             "{} error{} counted by the sanitizer's summary, none printed "
                             "in a form dcp-check reads (see the sanitizer's log)",
                             counted, counted == 1 ? "" : "s")
                       : fmt::format("{} more error{} counted but not printed (--print-limit {})",
                                     counted - parsed, counted - parsed == 1 ? "" : "s",
                                     kSanitizerPrintLimit);
  return f;
}

}  // namespace

bool is_sanitizer_tool(std::string_view tool) {
  return std::find(std::begin(kSanitizerTools), std::end(kSanitizerTools), tool) !=
         std::end(kSanitizerTools);
}

std::optional<std::string> find_compute_sanitizer() {
  if (const char* env = std::getenv("DCP_COMPUTE_SANITIZER"); env != nullptr && *env != '\0') {
    if (access(env, X_OK) == 0) return std::string(env);
    return std::nullopt;
  }
  if (auto on_path = find_on_path("compute-sanitizer")) return on_path;
  const std::string fallback = "/usr/local/cuda/bin/compute-sanitizer";
  if (access(fallback.c_str(), X_OK) == 0) return fallback;
  return std::nullopt;
}

std::vector<std::string> sanitizer_argv_prefix(const std::string& sanitizer_path,
                                               const std::string& tool,
                                               const std::string& log_file) {
  return {sanitizer_path, "--tool", tool, "--error-exitcode",
          std::to_string(kSanitizerErrorExitCode), "--print-limit",
          std::to_string(kSanitizerPrintLimit),
          // The harness checks every CUDA call it makes itself; the sanitizer
          // would also report the ones it makes on purpose (probes, injected faults).
          "--report-api-errors", "no", "--log-file", log_file};
}

std::vector<SanitizerFinding> parse_sanitizer_report(std::string_view text, const std::string& tool,
                                                     int rank) {
  Parsed p = parse(text, tool, rank);
  const int parsed = static_cast<int>(p.findings.size());
  if (p.summary_errors > parsed) {
    p.findings.push_back(unparsed_finding(tool, rank, p.summary_errors, parsed));
  }
  return std::move(p.findings);
}

size_t complete_records_end(std::string_view text) {
  // Walk complete lines; remember where the last record (or non-record) ended.
  size_t end = 0, pos = 0;
  bool open = false;  // a record started and nothing ended it yet
  size_t record_start = 0;
  while (true) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;  // an incomplete line: wait for it
    const ReportLine l = classify(text.substr(pos, nl - pos));
    if (l.ours && (l.separator || l.top)) {
      if (open) end = pos;  // the record before this line is complete
      open = l.top;
      record_start = pos;
      if (!open) end = nl + 1;
    } else if (!open) {
      end = nl + 1;
    }
    pos = nl + 1;
  }
  (void)record_start;
  return end;
}

std::vector<SanitizerFinding> SanitizerLog::read_new(bool final) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset_));
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const size_t take = final ? text.size() : complete_records_end(text);
  offset_ += take;
  Parsed p = parse(std::string_view(text).substr(0, take), tool_, rank_);
  if (p.summary_errors >= 0) summary_errors_ = p.summary_errors;
  findings_so_far_ += static_cast<int>(p.findings.size());
  if (final && summary_errors_ > findings_so_far_) {
    p.findings.push_back(unparsed_finding(tool_, rank_, summary_errors_, findings_so_far_));
    findings_so_far_ = summary_errors_;
  }
  return std::move(p.findings);
}

}  // namespace dcp
