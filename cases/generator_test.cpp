#include "generator.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

#include "geometry.h"
#include "random_case.h"
#include "value_table.h"

namespace dcp {
namespace {

Case small_case(EmptyPattern e, SpecialLse s, DType out, DType lse) {
  Case c;
  c.dcp_size = 4;
  c.geometry = *find_geometry("tiny");
  c.out_dtype = out;
  c.lse_dtype = lse;
  c.num_tokens = 29;
  c.out_pad_elems = 16;
  c.lse_pad_elems = 3;
  c.empty = e;
  c.special = s;
  c.seed = 0xabc123;
  return c;
}

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Every stored element equals the element-addressable value; padding is NaN.
void check_addressable(const Case& c, int group, int op) {
  const Format of = format_of(c.out_dtype), lf = format_of(c.lse_dtype);
  const int wh = c.dcp_size * c.geometry.heads_per_rank, d_count = c.geometry.head_dim;
  const OpGenerator gen(c, group, op);
  std::vector<double> row(static_cast<size_t>(d_count));
  for (int src = 0; src < c.dcp_size; ++src) {
    const SourceInputs in = generate_source_inputs(c, group, op, src);
    REQUIRE(in.partial_output.size() ==
            static_cast<size_t>(c.num_tokens * c.out_token_stride() * format_bytes(of)));
    REQUIRE(in.partial_lse.size() ==
            static_cast<size_t>(c.num_tokens * c.lse_token_stride() * format_bytes(lf)));
    for (int t = 0; t < c.num_tokens; ++t) {
      for (int h = 0; h < wh; ++h) {
        const double stored_lse = read_value(lf, in.partial_lse.data(),
                                             static_cast<size_t>(t * c.lse_token_stride() + h));
        REQUIRE(same_value(stored_lse, gen.lse_value(src, t, h)));
        gen.output_row(src, t, h, row.data());
        for (int d = 0; d < d_count; ++d) {
          const double stored =
              read_value(of, in.partial_output.data(),
                         static_cast<size_t>(t * c.out_token_stride() + h * d_count + d));
          REQUIRE(same_value(stored, row[static_cast<size_t>(d)]));
        }
      }
      for (int p = wh * d_count; p < c.out_token_stride(); ++p) {
        REQUIRE(std::isnan(read_value(of, in.partial_output.data(),
                                      static_cast<size_t>(t * c.out_token_stride() + p))));
      }
      for (int p = wh; p < c.lse_token_stride(); ++p) {
        REQUIRE(std::isnan(read_value(lf, in.partial_lse.data(),
                                      static_cast<size_t>(t * c.lse_token_stride() + p))));
      }
    }
    // The single-value functions agree with the bulk ones.
    for (int k = 0; k < 20; ++k) {
      const int t = (k * 7) % c.num_tokens, h = (k * 5) % wh, d = (k * 13) % d_count;
      gen.output_row(src, t, h, row.data());
      CHECK(same_value(generated_output_value(c, group, op, src, t, h, d),
                       row[static_cast<size_t>(d)]));
      CHECK(same_value(generated_lse_value(c, group, op, src, t, h), gen.lse_value(src, t, h)));
    }
  }
}

TEST_CASE("element-addressable and deterministic for every pattern and dtype") {
  for (auto e : {EmptyPattern::kNone, EmptyPattern::kOne, EmptyPattern::kAll, EmptyPattern::kRandom,
                 EmptyPattern::kSpec}) {
    for (auto s : {SpecialLse::kNone, SpecialLse::kEqual, SpecialLse::kHugeGap, SpecialLse::kPosInf,
                   SpecialLse::kNegInf, SpecialLse::kNan}) {
      CAPTURE(static_cast<int>(e));
      CAPTURE(static_cast<int>(s));
      const Case c = small_case(e, s, DType::kFp16, DType::kFp32);
      check_addressable(c, 1, 2);
    }
  }
  for (auto out : {DType::kFp16, DType::kBf16}) {
    for (auto lse : {DType::kFp32, DType::kFp16, DType::kBf16}) {
      check_addressable(small_case(EmptyPattern::kRandom, SpecialLse::kNan, out, lse), 0, 0);
    }
  }
  const Case c = small_case(EmptyPattern::kSpec, SpecialLse::kHugeGap, DType::kBf16, DType::kFp16);
  const SourceInputs a = generate_source_inputs(c, 0, 3, 1);
  const SourceInputs b = generate_source_inputs(c, 0, 3, 1);
  CHECK(a.partial_output == b.partial_output);
  CHECK(a.partial_lse == b.partial_lse);
}

TEST_CASE("inputs differ across seed, group, op and source, and are non-trivial") {
  const Case c = small_case(EmptyPattern::kNone, SpecialLse::kNone, DType::kBf16, DType::kFp32);
  const auto base = generate_source_inputs(c, 0, 0, 0);
  CHECK(base.partial_output != generate_source_inputs(c, 1, 0, 0).partial_output);
  CHECK(base.partial_output != generate_source_inputs(c, 0, 1, 0).partial_output);
  CHECK(base.partial_output != generate_source_inputs(c, 0, 0, 1).partial_output);
  Case c2 = c;
  c2.seed ^= 1;
  CHECK(base.partial_output != generate_source_inputs(c2, 0, 0, 0).partial_output);
  const OpGenerator gen(c, 0, 0);
  std::vector<double> row(64);
  double lo = 1e9, hi = -1e9, lse_lo = 1e9, lse_hi = -1e9;
  int zeros = 0;
  for (int t = 0; t < c.num_tokens; ++t) {
    for (int h = 0; h < 8; ++h) {
      gen.output_row(2, t, h, row.data());
      for (double v : row) {
        REQUIRE(std::isfinite(v));
        zeros += v == 0;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      const double l = gen.lse_value(2, t, h);
      REQUIRE(std::isfinite(l));
      lse_lo = std::min(lse_lo, l);
      lse_hi = std::max(lse_hi, l);
    }
  }
  CHECK(zeros == 0);
  CHECK(lo < -1.0);
  CHECK(hi > 1.0);
  CHECK(lo >= -2.0);
  CHECK(hi <= 2.0);
  CHECK(lse_hi - lse_lo > 10);  // varied spreads
}

TEST_CASE("layouts follow their empty patterns") {
  Case c = small_case(EmptyPattern::kNone, SpecialLse::kNone, DType::kBf16, DType::kFp32);
  SequenceLayout l = generate_layout(c, 0, 0);
  CHECK(l.query_start_loc.empty());
  CHECK(l.seq_lens.size() == 4u);
  CHECK_FALSE(l.row_masked(0, 0));

  c.empty = EmptyPattern::kOne;
  l = generate_layout(c, 0, 0);
  REQUIRE(l.query_start_loc.size() == static_cast<size_t>(c.num_tokens) + 1);
  int empty_ranks = 0;
  for (const auto& lens : l.seq_lens) {
    const auto zeros = std::count(lens.begin(), lens.end(), 0);
    CHECK((zeros == 0 || zeros == static_cast<long>(lens.size())));
    empty_ranks += zeros > 0;
  }
  CHECK(empty_ranks == 1);

  c.empty = EmptyPattern::kAll;
  for (int t_count : {1, 2, 29}) {
    c.num_tokens = t_count;
    for (int op = 0; op < 20; ++op) {
      l = generate_layout(c, 0, op);
      int all_masked = 0;
      for (int t = 0; t < t_count; ++t) {
        int masked = 0;
        for (int s = 0; s < 4; ++s) masked += l.row_masked(s, t);
        CHECK((masked == 0 || masked == 4));
        all_masked += masked == 4;
      }
      CHECK(all_masked >= 1);
    }
  }

  c.empty = EmptyPattern::kSpec;
  c.num_tokens = 29;
  l = generate_layout(c, 0, 0);
  CHECK(l.query_start_loc.front() == 0);
  CHECK(l.query_start_loc.back() == 29);
  bool multi = false;
  for (size_t s = 0; s + 1 < l.query_start_loc.size(); ++s) {
    const int len = l.query_start_loc[s + 1] - l.query_start_loc[s];
    CHECK(len >= 1);
    CHECK(len <= 4);
    multi |= len > 1;
  }
  CHECK(multi);
}

TEST_CASE("masked and planted rows hold NaN output; masked LSE is garbage") {
  Case c = small_case(EmptyPattern::kRandom, SpecialLse::kNegInf, DType::kFp16, DType::kFp32);
  c.num_tokens = 32;
  const OpGenerator gen(c, 0, 0);
  std::vector<double> row(64);
  int masked_rows = 0, planted = 0, finite_garbage = 0;
  for (int src = 0; src < 4; ++src) {
    for (int t = 0; t < c.num_tokens; ++t) {
      gen.output_row(src, t, 0, row.data());
      const double l = gen.lse_value(src, t, 0);
      if (gen.row_masked(src, t)) {
        ++masked_rows;
        CHECK(std::isnan(row[0]));
        finite_garbage += std::isfinite(l);
      } else if (l == -INFINITY) {
        ++planted;
        CHECK(std::isnan(row[0]));
      } else {
        CHECK(std::isfinite(row[0]));
      }
    }
  }
  CHECK(masked_rows > 0);
  CHECK(planted > 0);
  CHECK(finite_garbage > 0);  // a kernel ignoring the mask would be caught
}

TEST_CASE("rows read from the value table equal the per-value formula, long rows too") {
  int64_t values = 0, wrapped = 0;
  for (uint64_t i = 0; i < 30; ++i) {
    Case c = random_case(0x5eed, i, 8, *find_geometry(i % 3 == 0 ? "kimi" : "tiny"));
    if (i % 5 == 1) c.out_dtype = DType::kFp32;  // not in ids, but the generator has it
    if (i % 4 == 2) c.geometry.head_dim = 8 + static_cast<int>(i % 7);
    // Longer than the table's pad: the row wraps around the table's end.
    if (i % 6 == 5) c.geometry.head_dim = 4096;
    CAPTURE(format_case_id(c));
    const OpGenerator gen(c, static_cast<int>(i % 2), static_cast<int>(i % 3));
    const Format f = format_of(c.out_dtype);
    const int wh = c.dcp_size * c.geometry.heads_per_rank, dc = c.geometry.head_dim;
    std::vector<double> row(static_cast<size_t>(dc));
    std::vector<uint32_t> row_bits(static_cast<size_t>(dc));
    for (int src = 0; src < c.dcp_size; ++src) {
      for (int t = 0; t < c.num_tokens; t += 1 + c.num_tokens / 16) {
        for (int h = 0; h < wh; h += 1 + wh / 8) {
          gen.output_row(src, t, h, row.data());
          gen.output_row_bits(src, t, h, row_bits.data());
          const RowStream rs = gen.row_stream(src, t, h);
          wrapped += rs.normal && rs.draw.offset + static_cast<uint32_t>(dc) > kValueTableLength;
          for (int d = 0; d < dc; ++d) {
            const double v = gen.output_value(src, t, h, d);
            const auto di = static_cast<size_t>(d);
            REQUIRE(std::memcmp(&row[di], &v, sizeof v) == 0);  // NaN rows: the same NaN
            REQUIRE(row_bits[di] == encode(f, v));
            ++values;
          }
        }
      }
    }
  }
  CHECK(values > 1'000'000);
  CHECK(wrapped > 0);
}

TEST_CASE("the value table: each entry is the formula's, the pad repeats the start") {
  for (Format f : {Format::kFp16, Format::kBf16, Format::kFp32}) {
    for (int k = 0; k < 4; ++k) {
      CAPTURE(format_name(f));
      CAPTURE(k);
      const ValueTable t = value_table(f, k);
      int64_t zeros = 0, distinct_neighbours = 0;
      for (uint32_t i = 0; i < kValueTableLength; ++i) {
        const uint32_t want = encode(f, table_float(i % kValueTableSize, k));
        REQUIRE(t.bits[i] == want);
        REQUIRE(static_cast<double>(t.values[i]) == decode(f, want));
        REQUIRE(std::fabs(t.values[i]) <= 2.0f);
        zeros += t.values[i] == 0;
        distinct_neighbours += i > 0 && t.values[i] != t.values[i - 1];
      }
      CHECK(zeros <= (f == Format::kFp16 && k > 0 ? 16 : 0));  // fp16 may round a tiny value to 0
      CHECK(distinct_neighbours > static_cast<int64_t>(kValueTableLength) * 99 / 100);
    }
  }
  CHECK_THROWS(value_table(Format::kBf16, 4));
}

// The GPU's preparation reads recipe_bits' values from the device value
// table; on the host the same function, with the table and without, must
// give generate_source_inputs' bytes exactly (gpu_inputs checks the
// device's bytes against these).
TEST_CASE("the producer's recipe gives the generator's partial_output bit for bit") {
  // The device value table's bits (value_table_slot), as its fill kernel writes them.
  std::vector<uint16_t> table(kDeviceValueTableSlots);
  for (int f = 0; f < 2; ++f) {
    for (int k = 0; k < 4; ++k) {
      for (uint32_t i = 0; i < kValueTableSize; ++i) {
        table[value_table_slot(f == 1, k, i)] = value_table_bits(f == 1, k, i);
        REQUIRE(value_table_value(f == 1, k, i) ==
                static_cast<double>(value_table(f == 1 ? Format::kBf16 : Format::kFp16, k).values[i]));
      }
    }
  }
  int64_t elements = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    Case c = random_case(0x9e1, i, 8, *find_geometry(i % 4 == 0 ? "kimi" : "tiny"));
    if (i % 3 == 1) c.out_dtype = c.out_dtype == DType::kBf16 ? DType::kFp16 : DType::kBf16;
    CAPTURE(format_case_id(c));
    const int group = static_cast<int>(i % 2), op = static_cast<int>(i % 5);
    const OpGenerator gen(c, group, op);
    for (int src = 0; src < c.dcp_size; ++src) {
      const SourceInputs in = generate_source_inputs(c, group, op, src);
      const OutputStreams streams = output_streams(gen, c, src);
      REQUIRE(generate_source_lse(gen, c, src) == in.partial_lse);
      const OutputRecipe r = streams.recipe(c, streams.token_normal.data());
      OutputRecipe with_table = r;  // as the device reads it
      with_table.table = table.data();
      REQUIRE(in.partial_output.size() == static_cast<size_t>(2 * r.num_tokens * r.token_stride));
      int64_t differ = 0;
      for (int t = 0; t < r.num_tokens; ++t) {
        for (int64_t col = 0; col < r.token_stride; ++col) {
          const size_t at = 2 * static_cast<size_t>(t * r.token_stride + col);
          const auto stored =
              static_cast<uint16_t>(in.partial_output[at] | in.partial_output[at + 1] << 8);
          differ += recipe_bits(r, t, col) != stored;
          differ += recipe_bits(with_table, t, col) != stored;
          ++elements;
        }
      }
      CAPTURE(src);
      REQUIRE(differ == 0);
    }
  }
  CHECK(elements > 1'000'000);
}

TEST_CASE("regeneration is fast enough for the reference") {
  Case c;
  c.dcp_size = 4;
  c.geometry = *find_geometry("kimi");
  c.num_tokens = 128;
  const OpGenerator gen(c, 0, 0);
  std::vector<double> row(512);
  double sink = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int src = 0; src < 4; ++src) {
    for (int t = 0; t < 128; ++t) {
      for (int h = 0; h < 16; ++h) {
        gen.output_row(src, t, h, row.data());
        sink += row[7];
      }
    }
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  const double per_value = ns / (4.0 * 128 * 16 * 512);
  MESSAGE("generator: " << per_value << " ns per value");
  CHECK(std::isfinite(sink));
  CHECK(per_value < 40);  // generous for debug builds and busy CI machines
}

}  // namespace
}  // namespace dcp
