// The loader's validation of plugin tables and region requests, and the
// per-case skip decisions (the end-to-end refusals are in tests/e2e_plugins.sh).
#include "kernel_plugin.h"

#include <doctest/doctest.h>

#include <cstring>

#include "builtin_kernels.h"
#include "errors.h"
#include "sha256.h"

namespace dcp {
namespace {

dcpKernelPlugin_v1_t valid_table() { return *find_builtin_kernel("direct"); }

dcpRegionRequest_v1 region(const char* name, uint64_t bytes) {
  dcpRegionRequest_v1 r{};
  r.struct_size = sizeof r;
  std::snprintf(r.name, sizeof r.name, "%s", name);
  r.bytes = bytes;
  r.alignment = 256;
  return r;
}

TEST_CASE("plugin tables: the built-ins validate and each broken field is named") {
  CHECK(validate_plugin_table(valid_table()).empty());
  CHECK(validate_plugin_table(*find_builtin_kernel("stock")).empty());
  auto bad = [](auto mutate, const char* expect) {
    dcpKernelPlugin_v1_t t = valid_table();
    mutate(t);
    const std::string why = validate_plugin_table(t);
    CHECK_MESSAGE(why.find(expect) != std::string::npos, why);
  };
  bad([](auto& t) { t.struct_size = 8; }, "smaller than");
  bad([](auto& t) { t.abi_version = 2; }, "ABI version 2");
  bad([](auto& t) { t.name = nullptr; }, "name");
  bad([](auto& t) { t.out_dtypes = DCP_DTYPE_MASK(DCP_DTYPE_FP32); }, "out_dtypes");
  bad([](auto& t) { t.lse_bases = 0; }, "lse_bases");
  bad([](auto& t) { t.max_group_size = 1; }, "max_group_size");
  bad([](auto& t) { t.max_slots = 0; }, "max_slots");
  bad([](auto& t) { t.call = nullptr; }, "required function");
  bad([](auto& t) { t.num_mutants = 3, t.mutants = nullptr; }, "num_mutants");
}

TEST_CASE("region requests: sizes, names, alignment, kinds") {
  std::vector<dcpRegionRequest_v1> r = {region("a", 1024), region("b", 4096)};
  CHECK(validate_region_requests(r.data(), 2).empty());
  CHECK(validate_region_requests(r.data(), -1).find("regions") != std::string::npos);
  r[1] = region("a", 10);
  CHECK(validate_region_requests(r.data(), 2).find("repeated") != std::string::npos);
  r[1] = region("b", uint64_t{1} << 50);
  CHECK(validate_region_requests(r.data(), 2).find("asks for") != std::string::npos);
  r[1] = region("b", 0);
  CHECK(validate_region_requests(r.data(), 2).find("asks for 0") != std::string::npos);
  r[1] = region("b", 8);
  r[1].alignment = 3;
  CHECK(validate_region_requests(r.data(), 2).find("alignment") != std::string::npos);
  r[1] = region("b", 8);
  r[1].kind = 7;
  CHECK(validate_region_requests(r.data(), 2).find("kind") != std::string::npos);
  r[1] = region("b", 8);
  std::memset(r[1].name, 'x', sizeof r[1].name);  // unterminated
  CHECK(validate_region_requests(r.data(), 2).find("name") != std::string::npos);
}

TEST_CASE("case skips name the missing declaration and shared GPUs matter only where declared") {
  KernelInfo k = load_kernel("direct")->info();
  Case c;
  c.geometry = Geometry{"", 2, 64, 32, 0, ""};
  CHECK(case_skip_reason(k, c, true).empty());
  k.out_dtypes = DCP_DTYPE_MASK(DCP_DTYPE_FP16);
  CHECK(case_skip_reason(k, c, false).find("output dtype bf16") != std::string::npos);
  k = load_kernel("direct")->info();
  c.mode = ExecMode::kGraph;
  k.capabilities &= ~DCP_CAP_GRAPH_SAFE;
  CHECK(case_skip_reason(k, c, false).find("graph-safe") != std::string::npos);
  c.mode = ExecMode::kGraphSet;  // a graph set replays graphs too
  CHECK(case_skip_reason(k, c, false).find("graph-safe") != std::string::npos);
  c.mode = ExecMode::kGraph;
  k = load_kernel("direct")->info();
  c.empty = EmptyPattern::kOne;
  k.capabilities &= ~DCP_CAP_MASKS_EMPTY_KV;
  CHECK(case_skip_reason(k, c, false).find("masks-empty-kv") != std::string::npos);
  k = load_kernel("direct")->info();
  c.epoch_start = 0xfffffffdu;
  k.has_set_epoch = false;
  CHECK(case_skip_reason(k, c, false).find("set_epoch") != std::string::npos);
  k = load_kernel("direct")->info();
  c.num_slots = 2;
  c.mode = ExecMode::kPipelined;
  k.capabilities |= DCP_CAP_NEEDS_CORESIDENT;
  CHECK(case_skip_reason(k, c, false).empty());
  CHECK(case_skip_reason(k, c, true).find("needs-coresident") != std::string::npos);
  c.mode = ExecMode::kGraphSet;  // one call per batch: its slots are never in flight at once
  CHECK(case_skip_reason(k, c, true).empty());
  c.mode = ExecMode::kPipelined;
  k.max_slots = 1;
  CHECK(case_skip_reason(k, c, false).find("ubatch slot") != std::string::npos);
}

TEST_CASE("PDL producer cases are skipped by name for a device kernel without capability pdl") {
  const KernelInfo direct = load_kernel("direct")->info();
  const KernelInfo stock = load_kernel("stock")->info();
  CHECK(direct.has(DCP_CAP_PDL));
  CHECK_FALSE(stock.has(DCP_CAP_PDL));
  CHECK(capability_name(DCP_CAP_PDL) == "pdl");
  Case c;
  c.geometry = Geometry{"", 2, 64, 32, 0, ""};
  c.producer = Producer::kSlow;  // stream order alone: every kernel runs it
  CHECK(case_skip_reason(stock, c, false).empty());
  c.producer = Producer::kSlowPdl;
  CHECK(case_skip_reason(direct, c, false).empty());
  const std::string why = case_skip_reason(stock, c, false);
  CHECK(why.find("kernel 'stock'") != std::string::npos);
  CHECK(why.find("lacks capability pdl") != std::string::npos);
  KernelInfo no_pdl = direct;
  no_pdl.capabilities &= ~DCP_CAP_PDL;
  CHECK(case_skip_reason(no_pdl, c, false).find("pdl") != std::string::npos);
  KernelInfo host = no_pdl;  // a host plugin has no streams: the axis changes nothing for it
  host.memory = DCP_MEMORY_HOST;
  CHECK(case_skip_reason(host, c, false).empty());
}

TEST_CASE("dcpCallArgs_v1.flags is read only when struct_size covers it") {
  dcpCallArgs_v1 a{};
  a.struct_size = sizeof a;
  CHECK(DCP_CALL_HAS_FLAGS(&a));
  a.struct_size = offsetof(dcpCallArgs_v1, flags);  // a writer built before the field
  CHECK_FALSE(DCP_CALL_HAS_FLAGS(&a));
  a.struct_size = offsetof(dcpCallArgs_v1, timeout_ns) + sizeof a.timeout_ns;
  CHECK_FALSE(DCP_CALL_HAS_FLAGS(&a));
}

TEST_CASE("session refusals: memory kind vs backend, distinct GPUs") {
  const KernelInfo direct = load_kernel("direct")->info();
  const KernelInfo stock = load_kernel("stock")->info();
  CHECK(session_refusal(direct, true, false).empty());  // the host model of the direct path
  CHECK(session_refusal(stock, true, false).find("runs on the GPU") != std::string::npos);
  CHECK(session_refusal(stock, false, true).find("one GPU per rank") != std::string::npos);
  CHECK(session_refusal(stock, false, false).empty());
  KernelInfo host = direct;
  host.builtin = false;
  host.memory = DCP_MEMORY_HOST;
  CHECK(session_refusal(host, false, false).find("--backend host") != std::string::npos);
  CHECK(session_refusal(host, true, true).empty());
}

TEST_CASE("KernelInfo survives JSON and sha256 matches the FIPS test vectors") {
  KernelInfo k = load_kernel("direct")->info();
  const KernelInfo back = nlohmann::json(k).get<KernelInfo>();
  CHECK(back.spec == k.spec);
  CHECK(back.capabilities == k.capabilities);
  CHECK(back.mutants == k.mutants);
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex(std::string(1000, 'a')).substr(0, 16) == "41edece42d63e8d9");
}

}  // namespace
}  // namespace dcp
