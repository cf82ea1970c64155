// Replay tokens and replay command lines. A token is `w<world>-<case id>`: the
// case id already carries every input (geometry, dtypes, shape, seed, call
// sequence), the world fixes how many groups run it concurrently. Flags that
// change what executes (backend, impl, timeout, MPS) go on the command line.
#pragma once

#include <string>
#include <string_view>

#include "case.h"
#include "session.h"

namespace dcp {

struct ReplayToken {
  int world = 0;
  Case the_case;
};

std::string format_replay_token(int world, const Case& c);
// Throws UsageError with one line naming what is wrong with the token.
ReplayToken parse_replay_token(std::string_view token);

// The one-line command that reruns exactly this case with the same backend
// and implementation, printed with every failure by every command.
std::string replay_command(const SessionConfig& config, int world, const Case& c);

}  // namespace dcp
