// NumPy's .npy format, version 1.0 (numpy.lib.format): the 6-byte magic
// "\x93NUMPY", version 1.0, a little-endian uint16 header length, and an
// ASCII dict {'descr': ..., 'fortran_order': False, 'shape': (...), }
// padded with spaces and a final '\n' so the data starts on a 64-byte
// boundary, then the array in C order. NumPy and PyTorch (torch.from_numpy
// after numpy.load) read it directly.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dcp {

// Element types the dumps use: "<f2" fp16, "<u2" bf16 raw bits (NumPy has no
// bfloat16), "<f4", "<f8", "<i4", "|b1" bool.
struct NpyType {
  const char* descr;
  int bytes;
};
inline constexpr NpyType kNpyF2{"<f2", 2}, kNpyU2{"<u2", 2}, kNpyF4{"<f4", 4}, kNpyF8{"<f8", 8},
    kNpyI4{"<i4", 4}, kNpyBool{"|b1", 1};

// The header (magic through the padding '\n'), its length a multiple of 64.
std::string npy_header(const NpyType& type, const std::vector<int64_t>& shape);
// Writes header + data to `path` (data.size() must be the product of shape
// times type.bytes; the host is little-endian). Throws HarnessError on failure.
void write_npy(const std::string& path, const NpyType& type, const std::vector<int64_t>& shape,
               std::span<const uint8_t> data);

}  // namespace dcp
