#include "guard_zone.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <vector>

namespace dcp {

TEST_CASE("guard zones: intact canaries are silent; a changed byte names buffer, side, offset") {
  CHECK(guard_bytes_for(1) == 4096);
  CHECK(guard_bytes_for(16 * 512 * 2) == 16384);
  CHECK(guard_bytes_for(1 << 20) == 65536);
  CHECK(guard_bytes_for(5000) % 256 == 0);
  const size_t g = 4096;
  std::vector<uint8_t> before(g, kGuardCanary), after(g, kGuardCanary);
  CHECK(describe_guard_damage("output", before.data(), after.data(), g).empty());
  after[0] = 0x00;
  after[7] = 0x12;
  CHECK(describe_guard_damage("output", before.data(), after.data(), g) ==
        "'output' was written past its end: 2 bytes changed, the first at +0 after the end");
  after.assign(g, kGuardCanary);
  before[g - 3] = 0xFF;
  CHECK(describe_guard_damage("out_recv", before.data(), nullptr, g) ==
        "'out_recv' was written before its start: 1 byte changed, the nearest at -3");
  after[100] = 0;
  const std::string both = describe_guard_damage("output", before.data(), after.data(), g);
  CHECK(both.find("before its start") != std::string::npos);
  CHECK(both.find("the first at +100 after the end") != std::string::npos);
}

TEST_CASE("guard zones: one changed byte anywhere is found, whatever the zone's length") {
  for (size_t g : {size_t{1}, size_t{7}, size_t{8}, size_t{13}, size_t{4096}}) {
    for (size_t at = 0; at < g; at += (g > 64 ? 61 : 1)) {
      std::vector<uint8_t> zone(g, kGuardCanary);
      CHECK(describe_guard_damage("x", zone.data(), zone.data(), g).empty());
      zone[at] = kGuardCanary ^ 1;
      CHECK(describe_guard_damage("x", zone.data(), nullptr, g) ==
            fmt::format("'x' was written before its start: 1 byte changed, the nearest at -{}", g - at));
      CHECK(describe_guard_damage("x", nullptr, zone.data(), g) ==
            fmt::format("'x' was written past its end: 1 byte changed, the first at +{} after the end", at));
    }
  }
}

}  // namespace dcp
