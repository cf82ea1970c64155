#include "sanitizer_finding.h"

#include <fmt/format.h>

namespace dcp {

std::string SanitizerFinding::describe() const {
  std::string out = fmt::format("rank {}: {}: {}", rank, tool, kind);
  out +=
      kernel.empty() ? std::string(" (no kernel named)") : fmt::format(" in kernel '{}'", kernel);
  if (!location.empty()) {
    out += fmt::format(" at {}", location);
  } else if (!kernel.empty()) {
    out += " (no file:line: the kernel was built without -lineinfo)";
  }
  if (!address.empty()) {
    out += fmt::format(", address {}", address);
    if (!address_note.empty()) out += " " + address_note;
  }
  if (!thread.empty() || !block.empty()) {
    out += fmt::format(", by thread {} in block {}", thread.empty() ? "?" : thread,
                       block.empty() ? "?" : block);
  }
  return out;
}

void to_json(nlohmann::json& j, const SanitizerFinding& f) {
  j = {{"tool", f.tool},
       {"kind", f.kind},
       {"kernel", f.kernel},
       {"access", f.access},
       {"access_size", f.access_size},
       {"address", f.address},
       {"address_note", f.address_note},
       {"location", f.location},
       {"thread", f.thread},
       {"block", f.block},
       {"rank", f.rank}};
}

void from_json(const nlohmann::json& j, SanitizerFinding& f) {
  f.tool = j.value("tool", "");
  f.kind = j.value("kind", "");
  f.kernel = j.value("kernel", "");
  f.access = j.value("access", "");
  f.access_size = j.value("access_size", 0);
  f.address = j.value("address", "");
  f.address_note = j.value("address_note", "");
  f.location = j.value("location", "");
  f.thread = j.value("thread", "");
  f.block = j.value("block", "");
  f.rank = j.value("rank", -1);
}

}  // namespace dcp
