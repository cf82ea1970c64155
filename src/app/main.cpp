// dcp-check: entry point. The only place exceptions become exit codes
// (SPEC section 2): 0 pass, 1 kernel failure, 2 usage/environment, 3 harness.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "errors.h"
#include "exit_code.h"
#include "litmus_runner.h"
#include "version_info.h"
#include "worker.h"

namespace {

constexpr const char* kFooter = R"(With no command, `run` is assumed:  dcp-check --world 4 --geometry kimi
Each command has its own --help, e.g.  dcp-check run --help

Exit codes:
  0    every selected case passed
  1    the kernel failed a check (mismatch, NaN, hang, device trap)
  2    bad usage or missing environment (bad flag, no GPU, too few GPUs)
  3    the harness itself failed
  130  interrupted by SIGINT (143: SIGTERM); partial reports are still written)";

// One line, always: CLI11 and nested causes may carry newlines.
std::string one_line(std::string text) {
  for (char& ch : text) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int fail(const char* what, const std::string& message, int code) {
  std::fprintf(stderr, "dcp-check: %s: %s\n", what, one_line(message).c_str());
  return code;
}

int usage_code() {
  dcp::Findings f;
  f.must_pass = {dcp::FailureKind::kUsage};
  return dcp::exit_code(f);
}

// `run` is the default command: insert it when the first argument is a flag
// (or absent), so `dcp-check --world 4` means `dcp-check run --world 4`.
std::vector<std::string> with_default_command(int argc, char** argv,
                                              const std::vector<std::string>& commands) {
  std::vector<std::string> args(argv, argv + argc);
  const bool top_level_flag = args.size() > 1 && (args[1] == "-h" || args[1] == "--help" ||
                                                  args[1] == "--version");
  if (args.size() == 1 || (!top_level_flag && args[1].rfind('-', 0) == 0)) {
    args.insert(args.begin() + 1, "run");
    return args;
  }
  if (top_level_flag) return args;
  for (const auto& name : commands) {
    if (args[1] == name) return args;
  }
  std::string known;
  for (const auto& name : commands) known += (known.empty() ? "" : ", ") + name;
  throw dcp::UsageError("unknown command '" + args[1] + "' (commands: " + known +
                        "; see dcp-check --help)");
}

int cli_main(int argc, char** argv) {
  CLI::App app("dcp-check: tests a decode-context-parallel all-to-all + LSE combine kernel "
               "against a float64 reference, on every rank, every element.",
               "dcp-check");
  // One fact per line; the JSON reports' "tool" holds the same (version_info.h).
  app.set_version_flag("--version", [] { return dcp::version_text(dcp::version_info()); },
                       "Print the version, git revision, plugin ABI, CUDA runtime and driver, "
                       "NCCL; one per line");
  app.footer(kFooter);
  app.require_subcommand(1);
  dcp::CliContext ctx;
  // The command table: one line per command.
  const std::vector<CLI::App*> commands = {
      dcp::add_run_command(app, ctx),
      dcp::add_list_command(app, ctx),
      dcp::add_replay_command(app, ctx),
      dcp::add_stress_command(app, ctx),
      dcp::add_shrink_command(app, ctx),
      dcp::add_selftest_command(app, ctx),
      dcp::add_bench_command(app, ctx),
      dcp::add_litmus_command(app, ctx),
      dcp::add_merge_command(app, ctx),
  };
  std::vector<std::string> names;
  for (const CLI::App* c : commands) names.push_back(c->get_name());
  try {
    ctx.argv = with_default_command(argc, argv, names);
    std::vector<char*> cargs;
    for (auto& a : ctx.argv) cargs.push_back(a.data());
    app.parse(static_cast<int>(cargs.size()), cargs.data());
    ctx.argv.assign(argv, argv + argc);  // reports show what was typed
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: stdout, exit 0
    return fail("error", std::string(e.what()) + " (see --help)", usage_code());
  }
  if (!ctx.action) return fail("error", "no command selected (see --help)", usage_code());
  return ctx.action();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "__worker") {
    return dcp::worker_main(argc, argv);  // owns its own error reporting
  }
  if (argc > 1 && std::string_view(argv[1]) == "__litmus-peer") {
    return dcp::litmus_peer_main(argc, argv);  // the writer of a two-process litmus test
  }
  try {
    return cli_main(argc, argv);
  } catch (const dcp::UsageError& e) {
    return fail("error", e.what(), dcp::exit_code(dcp::findings_of(e)));
  } catch (const dcp::KernelFault& e) {
    return fail("kernel failure", e.what(), dcp::exit_code(dcp::findings_of(e)));
  } catch (const dcp::HarnessError& e) {
    return fail("harness error", e.what(), dcp::exit_code(dcp::findings_of(e)));
  } catch (const std::exception& e) {
    return fail("internal error", e.what(), dcp::exit_code(dcp::findings_of(e)));
  }
}
