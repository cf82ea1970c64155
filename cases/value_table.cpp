#include "value_table.h"

#include <array>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace dcp {
namespace {

struct Built {
  std::once_flag once;
  std::vector<float> values;
  std::vector<uint32_t> bits;
};

uint32_t to_bits(Format f, float x) {
  switch (f) {
    case Format::kFp16:
      return float_to_fp16_bits(x);
    case Format::kBf16:
      return float_to_bf16_bits(x);
    case Format::kFp32:
      return float_bits(x);
  }
  return 0;
}

}  // namespace

ValueTable value_table(Format f, int scale_k) {
  if (scale_k < 0 || scale_k > 3) throw std::out_of_range("value_table: scale_k must be 0..3");
  static std::array<Built, 3 * 4> tables;
  Built& b = tables[static_cast<size_t>(f) * 4 + static_cast<size_t>(scale_k)];
  std::call_once(b.once, [&] {
    b.values.resize(kValueTableLength);
    b.bits.resize(kValueTableLength);
    for (uint32_t i = 0; i < kValueTableLength; ++i) {
      const uint32_t bits = to_bits(f, table_float(i & (kValueTableSize - 1), scale_k));
      b.bits[i] = bits;
      b.values[i] = static_cast<float>(decode(f, bits));
    }
  });
  return {b.values.data(), b.bits.data()};
}

}  // namespace dcp
