// One error compute-sanitizer reported while a worker ran under it
// (--sanitize; session/sanitizer.h parses its log into these). Carried in
// CaseResult and written in the JSON report ("sanitizer_findings").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dcp {

struct SanitizerFinding {
  std::string tool;      // memcheck | racecheck | synccheck | initcheck
  std::string kind;      // the report's headline, e.g. "Invalid __global__ read of size 4 bytes"
  std::string kernel;    // the kernel (as the sanitizer prints it), "" if none was named
  std::string access;    // "read" | "write" | "atomic" | "race" | "barrier" | ... ("" unknown)
  int access_size = 0;   // bytes, 0 when not said
  std::string address;   // "0x7f4c3e000400", "" when not said
  std::string address_note;  // "is out of bounds", "is misaligned", and where it lies
  std::string location;  // "file.cu:41" (needs line info: -lineinfo), "" when absent
  std::string thread;    // "(0,0,0)", "" when not said
  std::string block;     // "(3,0,0)"
  int rank = -1;         // global rank whose worker reported it
  // One line for reports: "memcheck: Invalid __global__ read of size 4 bytes in
  // kernel K at 0x... (is out of bounds) by thread (0,0,0) in block (0,0,0)".
  std::string describe() const;
};

void to_json(nlohmann::json& j, const SanitizerFinding& f);
void from_json(const nlohmann::json& j, SanitizerFinding& f);

}  // namespace dcp
