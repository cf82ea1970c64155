// The hidden `__worker` subcommand: one process per rank, started by the
// supervisor as `/proc/self/exe __worker --socket P --rank i --world N --run-id ID`.
// It connects back, receives the config, builds one backend per DCP group size,
// then runs the cases it is sent until `shutdown`. main() calls worker_main()
// when argv[1] == "__worker" (argv[1] included in argv).
#pragma once

namespace dcp {

// Returns the process exit code; reports every failure to the supervisor as a
// `fatal` message first (kind "usage", "kernel" or "harness") when it still can.
int worker_main(int argc, char** argv);

}  // namespace dcp
