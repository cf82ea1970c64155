// dlopen() of libnccl.so.2 (see nccl_loader.h).
#include "nccl_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <vector>

#ifndef DCP_NCCL_LIBRARY_DIR
#define DCP_NCCL_LIBRARY_DIR ""
#endif

namespace dcp {
namespace {

template <typename Fn>
void resolve(void* handle, const char* name, Fn* out, const std::string& path) {
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    DCP_THROW(UsageError, "{} has no symbol {}: NCCL 2.x is required for the stock path", path,
              name);
  }
  *out = reinterpret_cast<Fn>(sym);
}

}  // namespace

std::shared_ptr<NcclLibrary> NcclLibrary::load() {
  std::shared_ptr<NcclLibrary> lib(new NcclLibrary());
  std::string errors;
  const std::string build_dir = DCP_NCCL_LIBRARY_DIR;
  std::vector<std::string> candidates = {"libnccl.so.2"};
  if (!build_dir.empty()) candidates.push_back(build_dir + "/libnccl.so.2");
  for (const std::string& path : candidates) {
    lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ != nullptr) {
      lib->path_ = path;
      break;
    }
    const char* why = dlerror();
    errors += fmt::format("\n  {}: {}", path, why != nullptr ? why : "unknown error");
  }
  if (lib->handle_ == nullptr) {
    DCP_THROW(UsageError,
              "the stock path needs NCCL, but libnccl.so.2 could not be loaded:{}\nSet "
              "LD_LIBRARY_PATH to the directory holding libnccl.so.2 (for a PyTorch wheel: "
              "<venv>/lib/python3.X/site-packages/nvidia/nccl/lib), or rebuild with "
              "-DNCCL_ROOT=<nccl prefix>; or use --impl direct",
              errors);
  }
  NcclApi& a = lib->api_;
  const std::string& p = lib->path_;
  resolve(lib->handle_, "ncclGetVersion", &a.get_version, p);
  resolve(lib->handle_, "ncclGetUniqueId", &a.get_unique_id, p);
  resolve(lib->handle_, "ncclCommInitRank", &a.comm_init_rank, p);
  resolve(lib->handle_, "ncclCommDestroy", &a.comm_destroy, p);
  resolve(lib->handle_, "ncclCommAbort", &a.comm_abort, p);
  resolve(lib->handle_, "ncclGroupStart", &a.group_start, p);
  resolve(lib->handle_, "ncclGroupEnd", &a.group_end, p);
  resolve(lib->handle_, "ncclSend", &a.send, p);
  resolve(lib->handle_, "ncclRecv", &a.recv, p);
  resolve(lib->handle_, "ncclGetErrorString", &a.get_error_string, p);
  return lib;
}

NcclLibrary::~NcclLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NcclLibrary::version() const {
  int code = 0;
  if (api_.get_version(&code) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return fmt::format("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100);
}

std::string nccl_version_or_empty() {
  try {
    return NcclLibrary::load()->version();
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace dcp
