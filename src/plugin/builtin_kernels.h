// The built-in kernels as plugin-ABI entries, selected like any plugin
// (`--kernel direct|stock`): "direct" is kernels/direct_a2a.h over the
// regions dcp-check maps for it; "stock" is pack -> NCCL all-to-all -> combine
// (src/gpu_stock.h), one communicator per ubatch slot. The self-test mutants of
// the direct kernel are its plugin mutants: selftest reaches them through the
// same seam as any plugin's.
#pragma once

#include <string>
#include <string_view>

#include "dcp_kernel_plugin.h"

namespace dcp {

// nullptr when `name` is not a built-in entry.
const dcpKernelPlugin_v1_t* find_builtin_kernel(std::string_view name);
std::string builtin_kernel_names();  // "direct, stock"

}  // namespace dcp
