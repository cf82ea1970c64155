// NCCL, loaded at run time with dlopen so a machine without NCCL still runs
// the direct path and gets a clear message (exit 2) when it asks for the
// stock path. <nccl.h> is included for its types only; every function goes
// through the table below.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>

#include "errors.h"

namespace dcp {

struct NcclApi {
  ncclResult_t (*get_version)(int*) = nullptr;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
  ncclResult_t (*group_start)() = nullptr;
  ncclResult_t (*group_end)() = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  const char* (*get_error_string)(ncclResult_t) = nullptr;
};

// One dlopen()ed libnccl.so.2; dlclose()d when the last owner lets go.
class NcclLibrary {
 public:
  // Tries "libnccl.so.2" (the loader's search path), then the directory CMake
  // found at build time (DCP_NCCL_LIBRARY_DIR). Throws UsageError saying what
  // to set when neither loads or a symbol is missing.
  static std::shared_ptr<NcclLibrary> load();
  ~NcclLibrary();
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  const NcclApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  std::string version() const;  // "2.28.9"

 private:
  NcclLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  NcclApi api_;
};

// The NCCL version string, or "" when NCCL cannot be loaded. Never throws.
std::string nccl_version_or_empty();

}  // namespace dcp

// NCCL_CHECK(lib, rank, Type, call): `call` uses lib.api(); on failure throws
// Type with the rank and NCCL's own error string.
#define NCCL_CHECK(lib, rank, Type, call)                                                         \
  do {                                                                                            \
    const ncclResult_t dcp_nccl_res_ = (call);                                                    \
    if (dcp_nccl_res_ != ncclSuccess) {                                                           \
      throw Type(fmt::format("rank {}: {} failed: NCCL error {} ({})",                           \
                             (rank), #call, static_cast<int>(dcp_nccl_res_),                      \
                             (lib).api().get_error_string(dcp_nccl_res_)));                       \
    }                                                                                             \
  } while (0)
