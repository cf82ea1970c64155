#include "report_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>

#include "errors.h"

namespace dcp {

void write_file_atomically(const std::string& path, const std::string& contents) {
  // Never rename over a device or pipe (--json /dev/stdout, /dev/null): write through.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) DCP_THROW(HarnessError, "cannot write {}: {}", path, std::strerror(errno));
    const bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
    const int write_errno = ok ? 0 : errno;
    if (std::fclose(f) != 0 || !ok) {
      DCP_THROW(HarnessError, "cannot write {}: {}", path,
                std::strerror(write_errno != 0 ? write_errno : errno));
    }
    return;
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) DCP_THROW(HarnessError, "cannot write {}: {}", path, std::strerror(errno));
  const bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    DCP_THROW(HarnessError, "cannot write {}: {}", path, std::strerror(err));
  }
}

void write_report_files(const std::vector<ReportFile>& files) {
  std::exception_ptr first;
  for (const ReportFile& f : files) {
    try {
      write_file_atomically(f.path, f.contents);
    } catch (const HarnessError&) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace dcp
