// A POSIX shared-memory segment, mapped read-write. The creator unlinks the
// name on request (once every peer has mapped it, so a crash later leaves
// nothing behind) and at destruction at the latest.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "errors.h"

namespace dcp {

class Segment {
 public:
  Segment(const std::string& name, size_t bytes, bool create) : name_(name), bytes_(bytes) {
    int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
    int fd = shm_open(name.c_str(), flags, 0600);
    DCP_CHECK(fd >= 0, HarnessError, "host backend: cannot {} shared memory {}: {}",
              create ? "create" : "open", name, std::strerror(errno));
    linked_ = create;
    int rc = create ? ftruncate(fd, static_cast<off_t>(bytes)) : 0;
    struct stat st {};
    if (rc == 0 && fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= bytes) {
      base_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    int err = errno;
    close(fd);
    if (base_ == nullptr || base_ == MAP_FAILED) {
      base_ = nullptr;
      unlink_name();
      DCP_THROW(HarnessError, "host backend: cannot size or map {} ({} bytes): {}", name, bytes,
                std::strerror(err));
    }
  }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment() {
    if (base_ != nullptr) munmap(base_, bytes_);
    unlink_name();
  }
  void unlink_name() {
    if (linked_) shm_unlink(name_.c_str());
    linked_ = false;
  }
  char* base() const { return static_cast<char*>(base_); }

 private:
  std::string name_;
  size_t bytes_ = 0;
  void* base_ = nullptr;
  bool linked_ = false;
};

}  // namespace dcp
