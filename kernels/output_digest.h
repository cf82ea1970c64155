// The output digest, one definition for the host (worker/case_runner.cpp,
// over bytes copied out) and the device (device_check.cu, over the output
// where it lies), so both checkers give one call the same digest.
//
//   block digest  the lanes hash (4 lanes of xxHash64's round over 8-byte
//                 little-endian words, the tail zero-padded to 32 bytes, then
//                 the length and the lanes folded with hash_in) of each
//                 kDigestBlock bytes, the last block shorter;
//   super digest  per kDigestSuper bytes: hash_in from kFnvOffset over the
//                 count of its blocks, then each block's digest in order;
//   digest        hash_in from kFnvOffset over the byte count, then each
//                 super digest in order.
// Every input bit reaches every output bit and lengths are folded in. The
// two levels let the device hash blocks in parallel and fold in a few
// steps. Digests are only compared within one build (replay, the
// determinism re-run, the audit), never stored across versions. C++17.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hd.h"
#include "mix.h"

namespace dcp {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
inline constexpr size_t kDigestBlock = 1024;
inline constexpr size_t kDigestSuper = size_t{64} << 10;  // 64 blocks
inline constexpr uint64_t kLaneMul1 = 0x9E3779B185EBCA87ull, kLaneMul2 = 0xC2B2AE3D27D4EB4Full;

DCP_HD uint64_t digest_lane_round(uint64_t acc, uint64_t word) {
  const uint64_t x = acc + word * kLaneMul2;
  return ((x << 31) | (x >> 33)) * kLaneMul1;
}

// Eight bytes at p, little-endian; p is 4-byte aligned on the device.
DCP_HD uint64_t digest_load_le64(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const auto* w = reinterpret_cast<const uint32_t*>(p);
  return static_cast<uint64_t>(w[0]) | static_cast<uint64_t>(w[1]) << 32;
#else
  uint64_t w;
  memcpy(&w, p, sizeof w);
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "digests read little-endian words");
  return w;
#endif
}

// The lanes hash's state: four xxHash64-style lanes, each fed every fourth
// 8-byte word (digest_lanes; the device's full blocks, device_check.cu).
struct DigestLanes {
  uint64_t v[4];
  DCP_HD explicit DigestLanes(uint64_t hash)
      : v{hash + kLaneMul1 + kLaneMul2, hash + kLaneMul2, hash, hash - kLaneMul1} {}
  // The next 32 bytes, as four little-endian words.
  DCP_HD void round(uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3) {
    v[0] = digest_lane_round(v[0], w0);
    v[1] = digest_lane_round(v[1], w1);
    v[2] = digest_lane_round(v[2], w2);
    v[3] = digest_lane_round(v[3], w3);
  }
  // The digest of n bytes so fed, continued from `hash`.
  DCP_HD uint64_t finish(uint64_t hash, size_t n) const {
    hash = hash_in(hash, n);
    for (uint64_t lane : v) hash = hash_in(hash, lane);
    return hash;
  }
};

// The lanes hash of p[0, n), continued from `hash`.
DCP_HD uint64_t digest_lanes(uint64_t hash, const uint8_t* p, size_t n) {
  DigestLanes lanes(hash);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    lanes.round(digest_load_le64(p + i), digest_load_le64(p + i + 8), digest_load_le64(p + i + 16),
                digest_load_le64(p + i + 24));
  }
  if (i < n) {
    uint8_t tail[32] = {};
    for (size_t j = 0; j < n - i; ++j) tail[j] = p[i + j];
    uint64_t w[4];
    for (int k = 0; k < 4; ++k) {
      w[k] = 0;
      for (int b = 7; b >= 0; --b) w[k] = w[k] << 8 | tail[8 * k + b];
    }
    lanes.round(w[0], w[1], w[2], w[3]);
  }
  return lanes.finish(hash, n);
}

// Blocks and supers of an n-byte buffer.
DCP_HD size_t digest_blocks(size_t n) { return n == 0 ? 1 : (n + kDigestBlock - 1) / kDigestBlock; }
DCP_HD size_t digest_supers(size_t n) {
  constexpr size_t per = kDigestSuper / kDigestBlock;
  return (digest_blocks(n) + per - 1) / per;
}

// One level's fold: hash_in from kFnvOffset over `head` (a super's block
// count, or a buffer's byte count), then each of parts[0, k) in order.
DCP_HD uint64_t digest_fold(uint64_t head, const uint64_t* parts, size_t k) {
  uint64_t h = hash_in(kFnvOffset, head);
  for (size_t i = 0; i < k; ++i) h = hash_in(h, parts[i]);
  return h;
}

// Block b's digest of p[0, n).
DCP_HD uint64_t digest_block(const uint8_t* p, size_t n, size_t b) {
  const size_t from = b * kDigestBlock;
  return digest_lanes(kFnvOffset, p + from, n - from < kDigestBlock ? n - from : kDigestBlock);
}

// Super digest `s` of p[0, n), block by block.
DCP_HD uint64_t digest_super(const uint8_t* p, size_t n, size_t s) {
  constexpr size_t per = kDigestSuper / kDigestBlock;
  const size_t first = s * per;
  size_t last = first + per;
  if (last > digest_blocks(n)) last = digest_blocks(n);
  uint64_t blocks[per];
  for (size_t b = first; b < last; ++b) blocks[b - first] = digest_block(p, n, b);
  return digest_fold(last - first, blocks, last - first);
}

}  // namespace dcp
