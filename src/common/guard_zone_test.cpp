#include "guard_zone.h"

#include <doctest/doctest.h>

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

}  // namespace dcp
