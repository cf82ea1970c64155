// The .npy writer byte for byte: NumPy's v1.0 layout (magic, version,
// little-endian header length, the dict padded to 64 bytes with a final
// newline), shapes of one and several dimensions, and the data after it.
#include "npy.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace dcp {
namespace {

TEST_CASE("npy header: magic, version 1.0, length, dict, 64-byte alignment") {
  const std::string h = npy_header(kNpyF4, {3, 4});
  REQUIRE(h.size() == 128);  // as numpy.save writes it: 10 + 118
  CHECK(h.substr(0, 6) == "\x93NUMPY");
  CHECK(h[6] == '\x01');
  CHECK(h[7] == '\x00');
  CHECK(static_cast<unsigned char>(h[8]) == 118);  // 128 - 10
  CHECK(h[9] == '\x00');
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  CHECK(h.substr(10, dict.size()) == dict);
  CHECK(h.back() == '\n');
  CHECK(h.find_first_not_of(' ', 10 + dict.size()) == h.size() - 1);
  CHECK(npy_header(kNpyI4, {5}).find("'shape': (5,), }") != std::string::npos);
  CHECK(npy_header(kNpyBool, {2, 3, 4}).find("'descr': '|b1'") != std::string::npos);
  CHECK(npy_header(kNpyBool, {2, 3, 4}).find("'shape': (2, 3, 4), }") != std::string::npos);
  CHECK(npy_header(kNpyF8, {}).find("'shape': (), }") != std::string::npos);
  // A long shape needs a second 64-byte block.
  const std::string long_h = npy_header(kNpyU2, {100000, 100000, 100000, 100000, 100000});
  CHECK(long_h.size() % 64 == 0);
  CHECK(long_h.size() == 128);
  // The header is what NumPy itself writes for the same array: its bytes,
  // from `np.save(f, np.zeros((3, 4), '<f4'))`, begin with these 10 and the dict.
  CHECK(h.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
}

TEST_CASE("write_npy: header then the data, and a size that does not match is refused") {
  const std::string path = std::filesystem::temp_directory_path() /
                           ("dcp-npy-test-" + std::to_string(getpid()) + ".npy");
  const uint8_t data[] = {1, 0, 0, 0, 2, 0, 0, 0};
  write_npy(path, kNpyI4, {2}, data);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t header = npy_header(kNpyI4, {2}).size();
  CHECK(header == 128);
  REQUIRE(bytes.size() == header + 8);
  CHECK(bytes.substr(0, header) == npy_header(kNpyI4, {2}));
  CHECK(bytes[header] == 1);
  CHECK(bytes[header + 4] == 2);
  CHECK_THROWS(write_npy(path, kNpyI4, {3}, data));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dcp
