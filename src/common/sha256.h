// SHA-256 (FIPS 180-4) of a file, for naming the kernel library under test in
// reports. Small and dependency-free; not used for anything security-related.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dcp {

// Lower-case hex digest of `bytes`.
std::string sha256_hex(std::string_view bytes);
// Of a whole file; "" when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace dcp
