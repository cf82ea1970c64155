#include "dump_manifest.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "errors.h"
#include "report_file.h"

namespace dcp {

nlohmann::ordered_json write_dump_manifest(const std::string& dir, const SessionConfig& config,
                                           const Case& c, const CaseResult& result) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  std::vector<int> missing;
  for (int r = 0; r < config.world; ++r) {
    const std::string path = fmt::format("{}/rank{}.json", dir, r);
    std::ifstream in(path);
    if (!in) {
      missing.push_back(r);
      continue;
    }
    try {
      ranks.push_back(nlohmann::ordered_json::parse(in));
    } catch (const nlohmann::json::exception&) {
      missing.push_back(r);
      continue;
    }
    std::remove(path.c_str());
  }
  const Geometry& g = c.geometry;
  nlohmann::ordered_json m = {
      {"format", "dcp-check dump 1"},
      {"case_id", format_case_id(c)},
      {"replay", result.replay},
      {"status", std::string(to_string(result.status))},
      {"failure", std::string(to_string(result.failure))},
      {"kernel", config.kernel.name},
      {"world", config.world},
      {"dcp_size", c.dcp_size},
      {"heads_per_rank", g.heads_per_rank},
      {"head_dim", g.head_dim},
      {"max_tokens", g.max_tokens},
      {"num_tokens", c.num_tokens},
      {"out_dtype", std::string(to_string(c.out_dtype))},
      {"lse_dtype", std::string(to_string(c.lse_dtype))},
      {"lse_base", c.lse_base == LseBase::kE ? "e" : "2"},
      {"empty", std::string(to_string(c.empty))},
      {"special_lse", std::string(to_string(c.special))},
      {"profile", config.profile.upstream ? "upstream" : "strict"},
      {"layout",
       "per rank and op: partial_output [T, out stride] (read [:, :W*H*D] as [T, W*H, D]), "
       "partial_lse [T, lse stride] (read [:, :W*H]), output [T, H, D] = heads "
       "[group_rank*H, (group_rank+1)*H) of the group's sources combined; reference, tolerance "
       "and mismatch [T, H, D] as the checker judged them"},
      {"bfloat16", "stored as raw bits ('<u2'): (x.astype(np.uint32) << 16).view(np.float32)"},
      {"ranks", ranks},
      {"missing_ranks", missing},
  };
  write_file_atomically((std::filesystem::path(dir) / "manifest.json").string(), m.dump(1) + "\n");
  return m;
}

}  // namespace dcp
