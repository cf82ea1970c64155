// One rank's dump without NumPy: an output equal to the rounded reference has
// an all-false mismatch mask; one element pushed far off is the only one
// marked; the fragment lists every tensor with its shape, and the .npy files
// hold what the manifest says.
#include "case_dump.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "geometry.h"

namespace dcp {
namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The data after a .npy header (its length at bytes 8-9, little-endian).
std::string npy_data(const std::filesystem::path& p) {
  const std::string b = read_all(p);
  const size_t header =
      10 + static_cast<unsigned char>(b[8]) + 256u * static_cast<unsigned char>(b[9]);
  return b.substr(header);
}

TEST_CASE("dump: inputs, output, reference, tolerance and the checker's mismatch mask") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dcp-dump-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  Case c;
  c.geometry = *find_geometry("tiny");
  c.dcp_size = 2;
  c.num_tokens = 3;
  c.out_dtype = DType::kBf16;
  c.lse_dtype = DType::kFp32;
  c.empty = EmptyPattern::kOne;
  c.seed = 0x1234;
  BackendConfig bc;
  bc.global_rank = 1;
  bc.group_rank = 1;
  bc.group_idx = 0;
  bc.dcp_size = 2;
  bc.members = {0, 1};
  bc.geometry = c.geometry;
  KeptCall call;
  call.op_idx = 0;
  call.num_tokens = 3;
  call.output = rounded_reference_output(c, 0, 1, 0);
  const size_t elems = size_t{3} * c.geometry.heads_per_rank * c.geometry.head_dim;
  REQUIRE(call.output.size() == elems * 2);

  auto mask = [&] { return npy_data(dir / "rank1_op0_mismatch.npy"); };
  nlohmann::json frag = dump_rank_case(dir.string(), c, bc, {call}, {});
  CHECK(frag["rank"] == 1);
  CHECK(frag["members"] == nlohmann::json({0, 1}));
  std::set<std::string> names;
  for (const auto& t : frag["tensors"]) {
    names.insert(t["name"].get<std::string>());
    CHECK(fs::exists(dir / t["file"].get<std::string>()));
  }
  CHECK(names == std::set<std::string>{"partial_output", "partial_lse", "seq_lens",
                                       "query_start_loc", "output", "reference", "tolerance",
                                       "mismatch"});
  for (const auto& t : frag["tensors"]) {
    if (t["name"] == "output") {
      CHECK(t["dtype"] == "bfloat16");
      CHECK(t["npy_dtype"] == "<u2");
      CHECK(t["shape"] == nlohmann::json({3, c.geometry.heads_per_rank, c.geometry.head_dim}));
    }
    if (t["name"] == "partial_output") {
      CHECK(t["shape"] == nlohmann::json({3, c.out_token_stride()}));
      CHECK(t["logical_shape"] ==
            nlohmann::json({3, 2 * c.geometry.heads_per_rank, c.geometry.head_dim}));
    }
  }
  CHECK(mask() == std::string(elems, '\0'));
  CHECK(npy_data(dir / "rank1_op0_output.npy") ==
        std::string(call.output.begin(), call.output.end()));
  CHECK(fs::exists(dir / "rank1.json"));

  // One element of row 1 far off: that element alone is marked.
  const size_t bad = c.geometry.head_dim + 5;
  call.output[2 * bad + 1] ^= 0x40;  // an exponent bit of bf16 element `bad`
  dump_rank_case(dir.string(), c, bc, {call}, {});
  std::string want(elems, '\0');
  want[bad] = '\1';
  CHECK(mask() == want);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dcp
