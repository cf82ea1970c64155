#include "replay.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "errors.h"
#include "options.h"
#include "selftest.h"
#include "suites.h"

namespace dcp {

std::string format_replay_token(int world, const Case& c) {
  return fmt::format("w{}-{}", world, format_case_id(c));
}

ReplayToken parse_replay_token(std::string_view token) {
  auto bad = [&](const std::string& why) -> UsageError {
    return UsageError(fmt::format("replay token '{}': {}", token, why));
  };
  constexpr const char* kShape = "expected w<world>-<case id> as printed by a failure or `dcp-check list` (e.g. w4-dcp2-...)";
  if (token.empty()) throw bad(kShape);
  if (token[0] != 'w') throw bad(fmt::format("does not start with 'w'; {}", kShape));
  const size_t dash = token.find('-');
  if (dash == std::string_view::npos || dash == 1) throw bad(fmt::format("no world size; {}", kShape));
  ReplayToken out;
  const char* first = token.data() + 1;
  const char* last = token.data() + dash;
  auto [ptr, ec] = std::from_chars(first, last, out.world);
  if (ec != std::errc() || ptr != last) {
    throw bad(fmt::format("world '{}' is not a number; {}", std::string_view(first, last - first),
                          kShape));
  }
  if (out.world < kMinWorld || out.world > kMaxWorld) {
    throw bad(fmt::format("world {} is outside {}..{}", out.world, kMinWorld, kMaxWorld));
  }
  const std::string_view id = token.substr(dash + 1);
  if (id.empty()) throw bad("the case id after 'w<world>-' is missing");
  std::string error;
  std::optional<Case> c = parse_case_id(id, &error);
  if (!c) throw bad(error.empty() ? "unparsable case id" : error);
  if (c->dcp_size < 2 || out.world % c->dcp_size != 0) {
    throw bad(fmt::format("dcp{} groups do not tile world {}", c->dcp_size, out.world));
  }
  try {
    validate_geometry(c->geometry, c->dcp_size);
  } catch (const UsageError& e) {
    throw bad(e.what());
  }
  out.the_case = *c;
  return out;
}

namespace {
// A path in a replay line: quoted only when the shell would split or expand it.
std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "0123456789/._-+=:,@") == std::string::npos;
  if (plain) return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}
}  // namespace

std::string replay_command(const SessionConfig& config, int world, const Case& c) {
  std::string cmd = "dcp-check replay " + format_replay_token(world, c);
  if (config.backend == BackendKind::kHost) cmd += " --backend host";
  if (config.kernel.spec != kDefaultKernel) cmd += " --kernel " + shell_quote(config.kernel.spec);
  if (config.against) cmd += " --against " + shell_quote(config.against->spec);
  if (config.against && config.against_exact) cmd += " --against-exact";
  if (config.timeout_s != SessionOptions{}.timeout_s) cmd += fmt::format(" --timeout {}", config.timeout_s);
  // --sanitize turns MPS off itself: the line says only --sanitize.
  if (config.mps == MpsMode::kOn) cmd += " --mps on";
  if (config.mps == MpsMode::kOff && config.sanitize_tool.empty()) cmd += " --mps off";
  if (!config.sanitize_tool.empty()) cmd += " --sanitize " + config.sanitize_tool;
  // The default checker is the device's on the GPU backend; the line keeps the CPU's.
  if (config.backend == BackendKind::kGpu && !config.profile.on_device) cmd += " --check cpu";
  // A test-only mutant is part of what ran: without it the line would pass.
  if (config.mutant != 0) {
    std::string name = std::to_string(config.mutant);
    for (const MutantInfo& m : mutants_for(config)) {
      if (m.id == config.mutant) name = m.name;
    }
    cmd += " --mutant " + name;
  }
  return cmd;
}

}  // namespace dcp
