// Report files (--json, --junit, --csv, failure bundles): every one is written
// atomically, so a reader never sees half a report.
#pragma once

#include <string>
#include <vector>

namespace dcp {

// Writes a temporary file beside `path` and renames it over `path`. A path
// that exists and is not a regular file (/dev/stdout, /dev/null, a pipe) is
// written through instead. Throws HarnessError if the file cannot be written.
void write_file_atomically(const std::string& path, const std::string& contents);

struct ReportFile {
  std::string path;
  std::string contents;
};

// Writes every file (each atomically), even after one fails; then throws the
// first failure's HarnessError, if any.
void write_report_files(const std::vector<ReportFile>& files);

}  // namespace dcp
