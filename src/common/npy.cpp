#include "npy.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "errors.h"

namespace dcp {

std::string npy_header(const NpyType& type, const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // "(3, 4)"; one dim keeps "(5,)"
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", type.descr, dims);
  constexpr size_t kPreamble = 10;  // magic 6, version 2, header length 2
  const size_t total = (kPreamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - kPreamble - dict.size() - 1, ' ');
  dict.push_back('\n');
  const auto len = static_cast<uint16_t>(dict.size());
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>(len >> 8));
  return out + dict;
}

void write_npy(const std::string& path, const NpyType& type, const std::vector<int64_t>& shape,
               std::span<const uint8_t> data) {
  static_assert(std::endian::native == std::endian::little,
                ".npy dumps assume a little-endian host");
  int64_t elems = 1;
  for (int64_t d : shape) elems *= d;
  DCP_CHECK(static_cast<size_t>(elems) * static_cast<size_t>(type.bytes) == data.size(),
            HarnessError, "{}: {} bytes for {} elements of {}", path, data.size(), elems,
            type.descr);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string header = npy_header(type, shape);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  out.close();
  DCP_CHECK(out.good(), HarnessError, "cannot write {}: {}", path, std::strerror(errno));
}

}  // namespace dcp
