// `--junit FILE`: JUnit XML as Jenkins, GitHub Actions reporters, Buildkite
// test analytics and GitLab read it: <testsuites> > <testsuite> per suite >
// <testcase classname="dcp-check.<suite>" name="<case id>">. Kernel failures
// (mismatch, NaN, hang, trap, crash) are <failure>, harness errors <error>,
// skipped cases <skipped message=...>; counts attributes match the children.
#pragma once

#include <string>
#include <string_view>

#include "run_report.h"

namespace dcp {

// Escapes &, <, >, " and ' and drops characters XML 1.0 forbids.
std::string xml_escape(std::string_view text);
std::string junit_xml(const RunReport& report);

}  // namespace dcp
