#include "case_dump.h"

#include <cmath>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "errors.h"
#include "generator.h"
#include "npy.h"
#include "numeric.h"
#include "row_reference.h"

namespace dcp {
namespace {

using nlohmann::json;

// The .npy element type and the manifest's dtype name of a case dtype.
std::pair<NpyType, std::string> npy_of(DType d) {
  switch (d) {
    case DType::kFp16:
      return {kNpyF2, "float16"};
    case DType::kBf16:
      return {kNpyU2, "bfloat16"};  // raw bits: (x.astype(np.uint32) << 16).view(np.float32)
    case DType::kFp32:
      return {kNpyF4, "float32"};
  }
  return {kNpyF4, "float32"};
}

std::vector<int64_t> c_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

template <typename T>
std::span<const uint8_t> bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

class RankDump {
 public:
  RankDump(std::string dir, int rank) : dir_(std::move(dir)), rank_(rank) {}

  // `logical`: the shape a reader slices the stored array to (padded inputs), else empty.
  void add(const std::string& role, int op, int call_tokens, const NpyType& type,
           const std::string& dtype, const std::vector<int64_t>& shape,
           std::span<const uint8_t> data, const std::vector<int64_t>& logical = {},
           const std::vector<int64_t>& logical_strides = {}) {
    const std::string file = fmt::format("rank{}_op{}_{}.npy", rank_, op, role);
    write_npy(dir_ + "/" + file, type, shape, data);
    json t = {{"name", role},
              {"file", file},
              {"rank", rank_},
              {"op", op},
              {"call_tokens", call_tokens},
              {"dtype", dtype},
              {"npy_dtype", type.descr},
              {"shape", shape},
              {"strides", c_strides(shape)}};
    if (!logical.empty()) {
      t["logical_shape"] = logical;
      t["logical_strides"] = logical_strides;  // elements, into the stored array
    }
    tensors_.push_back(std::move(t));
  }
  json tensors() const { return tensors_; }

 private:
  std::string dir_;
  int rank_;
  json tensors_ = json::array();
};

}  // namespace

json dump_rank_case(const std::string& dir, const Case& c, const BackendConfig& bc,
                    const std::vector<KeptCall>& calls, const CheckProfile& profile) {
  RankDump out(dir, bc.global_rank);
  const int W = c.dcp_size, H = c.geometry.heads_per_rank, D = c.geometry.head_dim;
  const auto [out_type, out_dtype] = npy_of(c.out_dtype);
  const auto [lse_type, lse_dtype] = npy_of(c.lse_dtype);
  const Format out_format = format_of(c.out_dtype);
  for (const KeptCall& call : calls) {
    Case k = c;
    k.num_tokens = call.num_tokens;
    const int T = call.num_tokens, op = call.op_idx;
    const OpGenerator gen(k, bc.group_idx, op);
    // Inputs, padded rows and all, as the kernel read them.
    const SourceInputs in = generate_source_inputs(gen, k, bc.group_rank);
    const int64_t out_stride = k.out_token_stride(), lse_stride = k.lse_token_stride();
    out.add("partial_output", op, T, out_type, out_dtype, {T, out_stride}, in.partial_output,
            {T, int64_t{W} * H, D}, {out_stride, D, 1});
    out.add("partial_lse", op, T, lse_type, lse_dtype, {T, lse_stride}, in.partial_lse,
            {T, int64_t{W} * H}, {lse_stride, 1});
    if (k.empty != EmptyPattern::kNone) {
      const std::vector<int32_t>& seq_lens = gen.layout().seq_lens.at(bc.group_rank);
      const std::vector<int32_t>& qsl = gen.layout().query_start_loc;
      out.add("seq_lens", op, T, kNpyI4, "int32", {static_cast<int64_t>(seq_lens.size())},
              bytes_of(seq_lens));
      out.add("query_start_loc", op, T, kNpyI4, "int32", {static_cast<int64_t>(qsl.size())},
              bytes_of(qsl));
    }
    // The kernel's output, and the checker's reference, tolerance and verdict.
    const size_t n = static_cast<size_t>(T) * H * D;
    DCP_CHECK(call.output.size() == n * static_cast<size_t>(format_bytes(out_format)), HarnessError,
              "dump: op {} output has {} bytes for {} elements", op, call.output.size(), n);
    out.add("output", op, T, out_type, out_dtype, {T, H, D}, call.output);
    std::vector<double> want(n), tol(n);
    std::vector<uint8_t> bad(n);
    const bool with_lse = !call.lse.empty();
    std::vector<double> lse_want, lse_tol;
    std::vector<uint8_t> lse_bad;
    if (with_lse) {
      lse_want.resize(static_cast<size_t>(T) * H);
      lse_tol.resize(lse_want.size());
      lse_bad.resize(lse_want.size());
    }
    RowReference r;
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < H; ++h) {
        const int head = bc.group_rank * H + h;  // this rank owns heads [r*H, (r+1)*H)
        row_weights(k, gen, t, head, r);
        row_values(k, gen, t, head, profile.upstream, r);
        const size_t row = static_cast<size_t>(t) * H + h;
        for (int d = 0; d < D; ++d) {
          const size_t i = row * D + d;
          want[i] = row_want(r, static_cast<size_t>(d), profile.upstream);
          tol[i] = row_element_tolerance(k, r, static_cast<size_t>(d), profile.upstream);
          const double g = read_value(out_format, call.output.data(), i);
          bad[i] = std::isnan(g) || !(std::fabs(g - want[i]) <= tol[i]);
        }
        if (with_lse) {
          const LseBound b = row_lse_bound(k, r.weights);
          float g32;
          std::memcpy(&g32, call.lse.data() + sizeof(float) * row, sizeof g32);
          lse_want[row] = b.want;
          lse_tol[row] = b.tol;
          lse_bad[row] =
              r.weights.all_masked ? !(g32 == b.want) : !(std::fabs(g32 - b.want) <= b.tol);
        }
      }
    }
    out.add("reference", op, T, kNpyF8, "float64", {T, H, D}, bytes_of(want));
    out.add("tolerance", op, T, kNpyF8, "float64", {T, H, D}, bytes_of(tol));
    out.add("mismatch", op, T, kNpyBool, "bool", {T, H, D}, bad);
    if (with_lse) {
      out.add("combined_lse", op, T, kNpyF4, "float32", {T, H}, call.lse);
      out.add("reference_lse", op, T, kNpyF8, "float64", {T, H}, bytes_of(lse_want));
      out.add("tolerance_lse", op, T, kNpyF8, "float64", {T, H}, bytes_of(lse_tol));
      out.add("mismatch_lse", op, T, kNpyBool, "bool", {T, H}, lse_bad);
    }
  }
  json fragment = {{"rank", bc.global_rank},
                   {"group", bc.group_idx},
                   {"group_rank", bc.group_rank},
                   {"members", bc.members},
                   {"tensors", out.tensors()}};
  const std::string path = fmt::format("{}/rank{}.json", dir, bc.global_rank);
  std::ofstream f(path, std::ios::trunc);
  f << fragment.dump(1) << "\n";
  f.close();
  DCP_CHECK(f.good(), HarnessError, "cannot write {}", path);
  return fragment;
}

}  // namespace dcp
