// Subcommand registration. Each command lives in its own cli_<command>.cpp and
// exposes one add_<command>_command(); main() calls them in order. Adding a
// command is one new file plus one line in main.cpp's command table.
//
// A command never runs inside CLI11's parse: its callback only stores the work
// in `ctx.action`, and main() runs it after parsing, so that every exception a
// command throws reaches main's single exception -> exit-code mapping.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dcp {

struct CliContext {
  std::vector<std::string> argv;  // the original command line, for reports and replay
  std::function<int()> action;    // set by the parsed subcommand's callback
};

// Each returns the subcommand it added (main uses the names to make `run` the
// default command).
CLI::App* add_run_command(CLI::App& app, CliContext& ctx);
CLI::App* add_list_command(CLI::App& app, CliContext& ctx);
CLI::App* add_replay_command(CLI::App& app, CliContext& ctx);
CLI::App* add_stress_command(CLI::App& app, CliContext& ctx);
CLI::App* add_shrink_command(CLI::App& app, CliContext& ctx);
CLI::App* add_selftest_command(CLI::App& app, CliContext& ctx);
CLI::App* add_bench_command(CLI::App& app, CliContext& ctx);
CLI::App* add_litmus_command(CLI::App& app, CliContext& ctx);
CLI::App* add_merge_command(CLI::App& app, CliContext& ctx);

}  // namespace dcp
