#include "sync_mode.h"

#include <doctest/doctest.h>

#include "errors.h"

namespace dcp {
namespace {

TEST_CASE("DCP_SYNC: blocking unless set; the four words; anything else is a usage error") {
  CHECK(parse_sync_mode(nullptr) == SyncMode::kBlock);
  CHECK(parse_sync_mode("") == SyncMode::kBlock);
  CHECK(parse_sync_mode("block") == SyncMode::kBlock);
  CHECK(parse_sync_mode("auto") == SyncMode::kAuto);
  CHECK(parse_sync_mode("spin") == SyncMode::kSpin);
  CHECK(parse_sync_mode("yield") == SyncMode::kYield);
  CHECK_THROWS_WITH_AS(parse_sync_mode("Block"),
                       "DCP_SYNC=Block: must be auto, spin, yield or block", UsageError);
  CHECK_THROWS_AS(parse_sync_mode("blocking"), UsageError);
}

}  // namespace
}  // namespace dcp
