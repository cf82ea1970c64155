// Lanes for the reference's inner loops (generator rows, the combine, the
// checker's row test), written with the GCC/Clang vector extension: a kernel
// is a template on N, the number of 64-bit lanes (N 32-bit lanes alongside),
// and is built three times, at the width each x86-64 level holds natively
// (GCC splits wider vectors, but it scalarises their comparisons):
//   N = 8 for x86-64-v4 (AVX-512), N = 4 for x86-64-v3 (AVX2, FMA), N = 2 for
//   the x86-64 baseline (SSE2) and every other CPU (e.g. aarch64 NEON).
// DCP_SIMD_DISPATCH defines the three and a function that picks one per call
// from level() (the CPU's best, or what force_level() set, for tests). Where
// that is not possible (see DCP_SIMD_X86_LEVELS) there is one build.
//
// Every operation is an exact IEEE or integer lane operation, so a lane
// computes bit for bit what the scalar formula computes (tests compare them
// at every level). A file whose kernels do floating-point arithmetic must be
// compiled with -ffp-contract=off: otherwise the FMA-capable v3 and v4 builds
// may fuse a*b+c and round differently from the scalar reference.
//
// Helpers are always_inline so that they are compiled with the caller's
// target (the v3 or v4 function), not the file's baseline.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

// Three builds picked at run time need GCC >= 12 (__builtin_cpu_supports of
// levels) on x86-64 and a baseline target without AVX2: a file built with
// -march=native (or any -march with AVX2) cannot inline its helpers into
// functions of another target, so it gets one build, at the width its own
// target holds (DCP_SIMD_STATIC_LANES); so does every other compiler and CPU.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && __GNUC__ >= 12 && \
    !defined(__AVX2__) && !defined(DCP_SIMD_BASELINE_ONLY)
#define DCP_SIMD_X86_LEVELS 1
#define DCP_SIMD_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#define DCP_SIMD_TARGET_V3 __attribute__((target("arch=x86-64-v3")))
#else
#define DCP_SIMD_X86_LEVELS 0
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && !defined(DCP_SIMD_BASELINE_ONLY)
#define DCP_SIMD_STATIC_LANES 8
#elif defined(__AVX2__) && !defined(DCP_SIMD_BASELINE_ONLY)
#define DCP_SIMD_STATIC_LANES 4
#else
#define DCP_SIMD_STATIC_LANES 2
#endif
#endif
#define DCP_SIMD_INLINE inline __attribute__((always_inline))

// Returning vectors from always-inlined helpers is not an ABI boundary:
// GCC's warning about AVX calling conventions does not apply (helpers take
// their vector arguments by reference, which it does not warn about). Not
// popped: it is reported where templates are instantiated, at the end of the
// including file (which only uses these lanes the same way).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dcp::simd {

// ---- which build runs ----

enum class Level : int { kBaseline = 0, kV3 = 3, kV4 = 4 };

inline Level cpu_level() {
#if DCP_SIMD_X86_LEVELS
  if (__builtin_cpu_supports("x86-64-v4")) return Level::kV4;
  if (__builtin_cpu_supports("x86-64-v3")) return Level::kV3;
  return Level::kBaseline;
#else
  return DCP_SIMD_STATIC_LANES == 8 ? Level::kV4
         : DCP_SIMD_STATIC_LANES == 4 ? Level::kV3
                                      : Level::kBaseline;  // the one build there is
#endif
}
inline std::atomic<int>& level_override() {
  static std::atomic<int> forced{-1};  // -1: none
  return forced;
}
// The level kernels run at: the CPU's, or a lower one forced for tests (with
// a single build, always that build's).
inline Level level() {
#if !DCP_SIMD_X86_LEVELS
  return cpu_level();
#endif
  static const Level cpu = cpu_level();
  const int forced = level_override().load(std::memory_order_relaxed);
  return forced >= 0 && forced < static_cast<int>(cpu) ? static_cast<Level>(forced) : cpu;
}
// Tests: run every kernel at `l` (or the CPU's best, if lower) from now on.
inline void force_level(Level l) { level_override().store(static_cast<int>(l)); }
inline void clear_forced_level() { level_override().store(-1); }

#if DCP_SIMD_X86_LEVELS
#define DCP_SIMD_DISPATCH(ret, name, params, args)                \
  DCP_SIMD_TARGET_V4 ret name##_v4 params { return name##_lanes<8> args; } \
  DCP_SIMD_TARGET_V3 ret name##_v3 params { return name##_lanes<4> args; } \
  ret name##_v2 params { return name##_lanes<2> args; }           \
  ret name params {                                               \
    switch (::dcp::simd::level()) {                               \
      case ::dcp::simd::Level::kV4:                               \
        return name##_v4 args;                                    \
      case ::dcp::simd::Level::kV3:                               \
        return name##_v3 args;                                    \
      case ::dcp::simd::Level::kBaseline:                         \
        break;                                                    \
    }                                                             \
    return name##_v2 args;                                        \
  }
#else
#define DCP_SIMD_DISPATCH(ret, name, params, args) \
  ret name params { return name##_lanes<DCP_SIMD_STATIC_LANES> args; }
#endif

// ---- lane types ----

template <typename T, int N>
struct VecOf;
// Spelled out per size: GCC mishandles a vector_size that depends on a
// template parameter.
#define DCP_SIMD_VEC(T)                                                  \
  template <>                                                            \
  struct VecOf<T, 2> {                                                   \
    using type = T __attribute__((vector_size(2 * sizeof(T))));          \
  };                                                                     \
  template <>                                                            \
  struct VecOf<T, 4> {                                                   \
    using type = T __attribute__((vector_size(4 * sizeof(T))));          \
  };                                                                     \
  template <>                                                            \
  struct VecOf<T, 8> {                                                   \
    using type = T __attribute__((vector_size(8 * sizeof(T))));          \
  };
DCP_SIMD_VEC(uint64_t)
DCP_SIMD_VEC(int64_t)
DCP_SIMD_VEC(double)
DCP_SIMD_VEC(uint32_t)
DCP_SIMD_VEC(int32_t)
DCP_SIMD_VEC(float)
DCP_SIMD_VEC(uint16_t)
#undef DCP_SIMD_VEC

template <typename T, int N>
using vec = typename VecOf<T, N>::type;

template <typename V>
using lane_t = std::remove_cvref_t<decltype(std::declval<V&>()[0])>;
template <typename V>
constexpr int lanes_of = static_cast<int>(sizeof(V) / sizeof(lane_t<V>));
template <typename V>
using uint_lanes = vec<std::conditional_t<sizeof(lane_t<V>) == 8, uint64_t,
                                          std::conditional_t<sizeof(lane_t<V>) == 4, uint32_t,
                                                             uint16_t>>,
                       lanes_of<V>>;

// ---- helpers ----

template <typename V, typename T>
DCP_SIMD_INLINE V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename V, typename T>
DCP_SIMD_INLINE void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}
// Same-size reinterpretation.
template <typename To, typename From>
DCP_SIMD_INLINE To bits(const From& v) {
  static_assert(sizeof(To) == sizeof(From));
  return __builtin_bit_cast(To, v);
}
// `mask` lanes are all ones or all zeros (a comparison's result), as wide as V's.
template <typename V, typename M>
DCP_SIMD_INLINE V select(const M& mask, const V& a, const V& b) {
  using U = uint_lanes<V>;
  const U m = bits<U>(mask);
  return bits<V>((m & bits<U>(a)) | (~m & bits<U>(b)));
}
template <typename V>
DCP_SIMD_INLINE V iota() {
  V v{};
  for (int i = 0; i < lanes_of<V>; ++i) v[i] = static_cast<lane_t<V>>(i);
  return v;
}
template <typename V>
DCP_SIMD_INLINE bool any(const V& mask) {
  bool r = false;
  for (int i = 0; i < lanes_of<V>; ++i) r |= mask[i] != 0;
  return r;
}
template <typename F64>
DCP_SIMD_INLINE F64 fabs(const F64& x) {
  using U = uint_lanes<F64>;
  return bits<F64>(bits<U>(x) & 0x7FFFFFFFFFFFFFFFull);
}

// float_to_bf16_bits (numeric.cpp) in lanes: RNE, NaN kept quiet.
template <typename F32>
DCP_SIMD_INLINE uint_lanes<F32> float_to_bf16(const F32& f) {
  using U = uint_lanes<F32>;
  const U x = bits<U>(f);
  const U rounded = (x + (0x7FFFu + ((x >> 16) & 1u))) >> 16;
  const U nan = (x >> 16) | 0x0040u;
  return select((x & 0x7FFFFFFFu) > 0x7F800000u, nan, rounded);
}

// float_to_fp16_bits (numeric.cpp) in lanes, case for case.
template <typename F32>
DCP_SIMD_INLINE uint_lanes<F32> float_to_fp16(const F32& f) {
  using U = uint_lanes<F32>;
  using I = vec<int32_t, lanes_of<F32>>;
  const U x = bits<U>(f);
  const U sign = (x >> 16) & 0x8000u;
  const U ax = x & 0x7FFFFFFFu;
  const U nan = sign | 0x7E00u | ((ax >> 13) & 0x3FFu);
  const U inf = sign | 0x7C00u;
  // Below 2^-14, subnormal or zero: nearbyint(|x| * 2^24), an integer <=
  // 1024. The product is exact (so fusing it with the add changes nothing),
  // and adding then subtracting 2^23 rounds to an integer, ties to even, as
  // nearbyint does in the default rounding mode.
  const U small = bits<U>(ax < 0x38800000u);
  const F32 scaled = bits<F32>(ax & small) * 0x1p24f;  // other lanes: 0, never out of range
  const F32 rounded = (scaled + 0x1p23f) - 0x1p23f;
  const U sub = sign | bits<U>(__builtin_convertvector(rounded, I));
  U r = ax - ((127u - 15u) << 23);  // rebias; a mantissa carry bumps the exponent
  r += 0xFFFu + ((r >> 13) & 1u);
  const U normal = sign | ((r >> 13) & 0xFFFFu);
  return select(ax > 0x7F800000u, nan, select(ax >= 0x477FF000u, inf, select(small, sub, normal)));
}

template <typename U32>
DCP_SIMD_INLINE vec<float, lanes_of<U32>> bf16_to_float(const U32& b) {
  return bits<vec<float, lanes_of<U32>>>(b << 16);
}

// fp16_bits_to_float (numeric.cpp) in lanes.
template <typename U32>
DCP_SIMD_INLINE vec<float, lanes_of<U32>> fp16_to_float(const U32& h) {
  using F = vec<float, lanes_of<U32>>;
  using I = vec<int32_t, lanes_of<U32>>;
  const U32 sign = (h & 0x8000u) << 16;
  const U32 exp = (h >> 10) & 0x1Fu;
  const U32 mant = h & 0x3FFu;
  const U32 special = sign | 0x7F800000u | mant << 13;
  const F sub_mag = __builtin_convertvector(bits<I>(mant), F) * 0x1p-24f;  // exact
  const U32 sub = sign | bits<U32>(sub_mag);  // sign ? -v : v, -0 included
  const U32 normal = sign | (exp + 112u) << 23 | mant << 13;
  return bits<F>(select(exp == 0x1Fu, special, select(exp == 0u, sub, normal)));
}

}  // namespace dcp::simd
