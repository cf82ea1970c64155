// Test helper: the message of the UsageError `fn` throws ("" if it throws none).
#pragma once

#include <string>

#include "errors.h"

namespace dcp {

template <typename Fn>
std::string usage_message(Fn&& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace dcp
