#include "options.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "errors.h"
#include "usage_message_for_tests.h"
#include "geometry.h"
#include "replay.h"
#include "suites.h"

namespace dcp {
namespace {

RunOptions host_run() {
  RunOptions o;
  o.session.backend = "host";
  o.geometry.name = "tiny";
  return o;
}

}  // namespace

TEST_CASE("run options: defaults validate into a GPU session on the kimi preset") {
  const ValidRun v = validate_run_options(RunOptions{});
  CHECK(v.config.world == 2);
  CHECK(v.config.backend == BackendKind::kGpu);
  CHECK(v.config.kernel.spec == "direct");
  CHECK(v.config.kernel.builtin);
  CHECK_FALSE(v.config.against.has_value());
  CHECK(v.config.geometry == *find_geometry("kimi"));
  CHECK(v.selection.suite == "default");
  CHECK(v.config.fault.kind == FaultSpec::Kind::kNone);
}

TEST_CASE("run options: world must be 2..8") {
  for (int world : {-1, 0, 1, 9, 64}) {
    RunOptions o = host_run();
    o.world = world;
    CHECK(usage_message([&] { validate_run_options(o); }).find("--world") != std::string::npos);
  }
  for (int world : {2, 3, 4, 8}) {
    RunOptions o = host_run();
    o.world = world;
    CHECK(validate_run_options(o).config.world == world);
  }
}

TEST_CASE("geometry overrides: validated, and a changed value makes the geometry custom") {
  GeometryOptions g;
  g.name = "kimi";
  g.head_dim = 100;
  CHECK(usage_message([&] { resolve_geometry(g, 4); }).find("--head-dim 100") != std::string::npos);
  g.head_dim = 2048;
  CHECK(usage_message([&] { resolve_geometry(g, 4); }).find("--head-dim") != std::string::npos);
  g.head_dim.reset();
  g.heads_per_rank = 0;
  CHECK(usage_message([&] { resolve_geometry(g, 4); }).find("--heads-per-rank") != std::string::npos);
  g.heads_per_rank = 129;
  CHECK_FALSE(usage_message([&] { resolve_geometry(g, 4); }).empty());
  g.heads_per_rank.reset();
  g.max_tokens = 4097;
  CHECK(usage_message([&] { resolve_geometry(g, 4); }).find("--max-tokens") != std::string::npos);

  g.max_tokens = 64;
  const Geometry custom = resolve_geometry(g, 4);
  CHECK(custom.name.empty());
  CHECK(custom.heads_per_rank == 16);
  CHECK(custom.head_dim == 512);
  CHECK(custom.max_tokens == 64);

  // Overrides equal to the preset keep its name (short ids).
  GeometryOptions same;
  same.name = "kimi";
  same.heads_per_rank = 16;
  CHECK(resolve_geometry(same, 4).name == "kimi");

  GeometryOptions unknown;
  unknown.name = "nosuch";
  CHECK(usage_message([&] { resolve_geometry(unknown, 2); }).find("kimi") != std::string::npos);
}

TEST_CASE("padded storage must hold every head of the group") {
  GeometryOptions g;
  g.name = "kimi-k3";
  g.heads_per_rank = 32;
  CHECK(usage_message([&] { resolve_geometry(g, 8); }).find("128-head") != std::string::npos);
  CHECK(resolve_geometry(g, 4).heads_per_rank == 32);
}

TEST_CASE("seed: decimal or 0x-hex, full 64 bits, nothing else") {
  CHECK(parse_seed("0") == 0);
  CHECK(parse_seed("12345") == 12345);
  CHECK(parse_seed("0x1a2b") == 0x1a2b);
  CHECK(parse_seed("0xffffffffffffffff") == ~uint64_t{0});
  for (const char* bad : {"", "-1", "0x", "12a", "abc", "18446744073709551616", " 1"}) {
    CHECK_THROWS_AS(parse_seed(bad), UsageError);
  }
}

TEST_CASE("suite and filter") {
  SelectionOptions s;
  s.suite = "nosuch";
  CHECK(usage_message([&] { validate_selection(s); }).find("--suite") != std::string::npos);
  s.suite = "smoke";
  s.filter = "(";
  CHECK(usage_message([&] { validate_selection(s); }).find("--filter") != std::string::npos);
  s.filter = "graph|pipe";
  const CaseSelection sel = validate_selection(s);
  CHECK(sel.matches("dcp2-tiny-bf16-lsefp32-base2-t1-contig-emptynone-ub1-graph3-s1"));
  CHECK_FALSE(sel.matches("dcp2-tiny-bf16-lsefp32-base2-t1-contig-emptynone-ub1-eager2-s1"));
  CHECK(CaseSelection{}.matches("anything"));
}

TEST_CASE("--inject-fault KIND:RANK:CASE:OP") {
  const FaultSpec f = parse_fault_spec("corrupt:1:2:3", 4);
  CHECK(f.kind == FaultSpec::Kind::kCorrupt);
  CHECK(f.rank == 1);
  CHECK(f.case_index == 2);
  CHECK(f.op_idx == 3);
  CHECK(parse_fault_spec("cuda-error:0:0:0", 2).kind == FaultSpec::Kind::kCudaError);
  CHECK(parse_fault_spec("", 2).kind == FaultSpec::Kind::kNone);
  CHECK(usage_message([] { parse_fault_spec("corrupt:4:0:0", 4); }).find("rank 4") != std::string::npos);
  for (const char* bad : {"corrupt", "corrupt:1", "corrupt:1:2", "corrupt:1:2:3:4", "boom:0:0:0",
                          "crash:x:0:0", "crash:0:-1:0", "crash:0:0:"}) {
    CHECK_THROWS_AS(parse_fault_spec(bad, 4), UsageError);
  }
}

TEST_CASE("session flags map to the SessionConfig; conflicts are usage errors") {
  RunOptions o = host_run();
  o.session.impl = "both";
  o.session.timeout_s = 2.5;
  o.session.mps = "off";
  o.report.verbose = true;
  ValidRun v = validate_run_options(o);
  CHECK(v.config.backend == BackendKind::kHost);
  REQUIRE(v.config.against.has_value());
  CHECK(v.config.against->spec == "stock");
  CHECK(v.config.against_exact);  // direct and stock must agree bit for bit
  CHECK(v.config.timeout_s == 2.5);
  CHECK(v.config.mps == MpsMode::kOff);
  CHECK(v.config.verbosity == 1);

  o.session.impl = "stock";
  CHECK(validate_run_options(o).config.kernel.spec == "stock");
  o.session.impl.clear();
  o.session.kernel = "stock";
  o.session.against = "direct";
  ValidRun k = validate_run_options(o);
  CHECK(k.config.kernel.spec == "stock");
  CHECK(k.config.against->spec == "direct");
  CHECK_FALSE(k.config.against_exact);  // --against alone: within tolerance
  o.session.against_exact = true;
  CHECK(validate_run_options(o).config.against_exact);
  o.session.against.clear();
  CHECK(usage_message([&] { validate_run_options(o); }).find("--against-exact needs --against") !=
        std::string::npos);
  o.session.against = "direct";
  o.session.against_exact = false;
  o.session.impl = "both";
  CHECK(usage_message([&] { validate_run_options(o); }).find("--impl") != std::string::npos);
  o.session.impl.clear();
  o.session.kernel = "nosuch";
  CHECK(usage_message([&] { validate_run_options(o); }).find("no built-in kernel") !=
        std::string::npos);
  o.session.kernel = "/nonexistent/libx.so";
  CHECK(usage_message([&] { validate_run_options(o); }).find("no such file") != std::string::npos);
  o.session.kernel = "direct";
  o.session.against = "direct";
  CHECK(usage_message([&] { validate_run_options(o); }).find("same kernel") != std::string::npos);

  RunOptions q = host_run();
  q.report.quiet = q.report.verbose = true;
  CHECK(usage_message([&] { validate_run_options(q); }).find("-q") != std::string::npos);
  RunOptions m = host_run();
  m.session.mps = "on";
  CHECK(usage_message([&] { validate_run_options(m); }).find("--mps on") != std::string::npos);
  for (double t : {0.0, -1.0, 1e9}) {
    RunOptions bad = host_run();
    bad.session.timeout_s = t;
    CHECK(usage_message([&] { validate_run_options(bad); }).find("--timeout") != std::string::npos);
  }
  RunOptions b = host_run();
  b.session.backend = "tpu";
  CHECK(usage_message([&] { validate_run_options(b); }).find("--backend") != std::string::npos);
}

TEST_CASE("DCP_SYNC is read before any worker starts: a bad value is a usage error on the GPU") {
  setenv("DCP_SYNC", "sometimes", 1);
  CHECK(usage_message([] { validate_run_options(RunOptions{}); }).find("DCP_SYNC=sometimes") !=
        std::string::npos);
  CHECK(validate_run_options(host_run()).config.backend == BackendKind::kHost);  // not read there
  setenv("DCP_SYNC", "spin", 1);
  CHECK(validate_run_options(RunOptions{}).config.backend == BackendKind::kGpu);
  unsetenv("DCP_SYNC");
}

TEST_CASE("report paths are proven writable up front and nothing is left behind") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dcp-options-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string ok = (dir / "r.json").string();
  CHECK_NOTHROW(validate_output_path("--json", ok));
  CHECK(fs::is_empty(dir));  // the probe file is gone, the report not yet created
  CHECK(usage_message([&] { validate_output_path("--json", (dir / "no/r.json").string()); })
            .find("does not exist") != std::string::npos);
  CHECK(usage_message([&] { validate_output_path("--junit", dir.string()); })
            .find("is a directory") != std::string::npos);
  ReportOptions same;
  same.json_path = same.junit_path = ok;
  CHECK(usage_message([&] { validate_report_options(same); }).find("different") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("replay tokens round-trip and malformed ones say what is wrong") {
  SuiteOptions so;
  so.world = 4;
  so.geometry = *find_geometry("tiny");
  for (const Case& c : build_suite("smoke", so)) {
    const ReplayToken t = parse_replay_token(format_replay_token(4, c));
    CHECK(t.world == 4);
    CHECK(t.the_case == c);
  }
  const Case c = build_suite("smoke", so).front();
  const std::string id = format_case_id(c);
  CHECK(usage_message([&] { parse_replay_token(id); }).find("'w'") != std::string::npos);
  CHECK(usage_message([&] { parse_replay_token("w9-" + id); }).find("world 9") != std::string::npos);
  CHECK(usage_message([&] { parse_replay_token("wx-" + id); }).find("not a number") != std::string::npos);
  CHECK(usage_message([&] { parse_replay_token("w4-"); }).find("missing") != std::string::npos);
  CHECK_FALSE(usage_message([&] { parse_replay_token("w4-" + id + "-junk"); }).empty());
  CHECK_FALSE(usage_message([&] { parse_replay_token(""); }).empty());
  if (c.dcp_size == 4) {
    CHECK(usage_message([&] { parse_replay_token("w2-" + id); }).find("tile") != std::string::npos);
  }
}

TEST_CASE("replay_command carries what changes execution, and only that") {
  Case c;
  c.geometry = *find_geometry("tiny");
  c.num_tokens = 3;
  SessionConfig config;
  const std::string plain = replay_command(config, 2, c);
  CHECK(plain == "dcp-check replay " + format_replay_token(2, c));
  config.backend = BackendKind::kHost;
  config.kernel = load_kernel("stock")->info();
  config.timeout_s = 3;
  const std::string host = replay_command(config, 2, c);
  CHECK(host.find(" --backend host") != std::string::npos);
  CHECK(host.find(" --kernel stock") != std::string::npos);
  CHECK(host.find(" --timeout 3") != std::string::npos);
  config.kernel = default_kernel_info();
  config.against = load_kernel("stock")->info();
  CHECK(replay_command(config, 2, c).find(" --against stock") != std::string::npos);
  CHECK(replay_command(config, 2, c).find("--against-exact") == std::string::npos);
  config.against_exact = true;
  CHECK(replay_command(config, 2, c).find(" --against stock --against-exact") != std::string::npos);
  config.kernel.spec = "./my lib.so";
  CHECK(replay_command(config, 2, c).find(" --kernel './my lib.so'") != std::string::npos);
  // --sanitize is part of what ran; the MPS it turned off is not said again.
  config.sanitize_tool = "memcheck";
  config.mps = MpsMode::kOff;
  const std::string sanitized = replay_command(config, 2, c);
  CHECK(sanitized.find(" --sanitize memcheck") != std::string::npos);
  CHECK(sanitized.find("--mps") == std::string::npos);
}

TEST_CASE("--sanitize: refused where it cannot run, exit 2 with the reason") {
  SessionOptions s;
  s.backend = "host";
  s.sanitize = "memcheck";
  CHECK(usage_message([&] {
          make_session_config(s, {}, 2, *find_geometry("tiny"));
        }).find("needs --backend gpu") != std::string::npos);
  s.backend = "gpu";
  s.mps = "on";
  CHECK(usage_message([&] { make_session_config(s, {}, 2, *find_geometry("tiny")); }).find("MPS") !=
        std::string::npos);
  s.mps = "auto";
  s.sanitize = "leakcheck";
  CHECK(usage_message([&] {
          make_session_config(s, {}, 2, *find_geometry("tiny"));
        }).find("--sanitize 'leakcheck'") != std::string::npos);
}

TEST_CASE("--check: gpu by default on the GPU backend, cpu kept in replay lines, refused on the host") {
  const Geometry tiny = *find_geometry("tiny");
  SessionOptions s;
  CHECK(make_session_config(s, {}, 2, tiny).profile.on_device);
  s.check = "cpu";
  const SessionConfig cpu = make_session_config(s, {}, 2, tiny);
  CHECK_FALSE(cpu.profile.on_device);
  Case c;
  c.geometry = tiny;
  CHECK(replay_command(cpu, 2, c).find(" --check cpu") != std::string::npos);
  s.check = "fpga";
  CHECK(usage_message([&] { make_session_config(s, {}, 2, tiny); }).find("--check") !=
        std::string::npos);
  s.check = "gpu";
  s.backend = "host";
  CHECK(usage_message([&] { make_session_config(s, {}, 2, tiny); }).find("needs --backend gpu") !=
        std::string::npos);
  s.check = "";
  CHECK(replay_command(make_session_config(s, {}, 2, tiny), 2, c).find("--check") ==
        std::string::npos);
}

TEST_CASE("replay --dump: one run, an empty or new directory") {
  SuiteOptions so;
  so.world = 2;
  so.geometry = *find_geometry("tiny");
  ReplayOptions o;
  o.token = format_replay_token(2, build_suite("smoke", so).front());
  o.session.backend = "host";
  const std::string dir =
      std::filesystem::temp_directory_path() / ("dcp-dump-opt-" + std::to_string(::getpid()));
  o.dump_dir = dir;
  o.repeat = 2;
  CHECK(usage_message([&] { validate_replay_options(o); }).find("--repeat") != std::string::npos);
  o.repeat = 1;
  CHECK(validate_replay_options(o).config.dump_dir == dir);  // made when missing
  CHECK(std::filesystem::is_directory(dir));
  { std::ofstream(dir + "/manifest.json") << "{}"; }
  CHECK(usage_message([&] { validate_replay_options(o); }).find("already holds a dump") !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("replay options: --repeat bounds") {
  SuiteOptions so;
  so.world = 2;
  so.geometry = *find_geometry("tiny");
  ReplayOptions o;
  o.token = format_replay_token(2, build_suite("smoke", so).front());
  o.session.backend = "host";
  CHECK(validate_replay_options(o).repeat == 1);
  o.repeat = 0;
  CHECK(usage_message([&] { validate_replay_options(o); }).find("--repeat") != std::string::npos);
  o.repeat = 5;
  const ValidReplay v = validate_replay_options(o);
  CHECK(v.config.world == 2);
  CHECK(v.config.geometry == v.the_case.geometry);
}

}  // namespace dcp
