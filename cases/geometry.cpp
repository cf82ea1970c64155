#include "geometry.h"

namespace dcp {

const std::vector<Geometry>& geometry_presets() {
  // Sizes after TP sharding, from the models' public config.json files.
  static const std::vector<Geometry> presets = {
      {"kimi", 16, 512, 128, 0,
       "Kimi-K2.5 (moonshotai/Kimi-K2.5 config.json: num_attention_heads=64, "
       "kv_lora_rank=512) at TP4: 64/4 = 16 heads per rank, D = 512"},
      {"kimi-k3", 6, 512, 128, 128,
       "Kimi-K3 decode geometry of the upstream direct all-to-all test: 6 heads per rank, "
       "D = 512, viewed inside 128-head padded backing storage"},
      {"deepseek", 16, 512, 128, 0,
       "DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json: num_attention_heads=128, "
       "kv_lora_rank=512) at TP8: 128/8 = 16 heads per rank, D = 512"},
      {"tiny", 2, 64, 32, 0, "synthetic: H = 2, D = 64, max 32 tokens (fast tests)"},
  };
  return presets;
}

std::optional<Geometry> find_geometry(std::string_view name) {
  for (const Geometry& g : geometry_presets()) {
    if (g.name == name) return g;
  }
  return std::nullopt;
}

Geometry custom_geometry(int heads_per_rank, int head_dim, int max_tokens, int storage_heads) {
  Geometry g;
  g.name = "";
  g.heads_per_rank = heads_per_rank;
  g.head_dim = head_dim;
  g.max_tokens = max_tokens;
  g.storage_heads = storage_heads;
  g.source = "custom (--heads-per-rank/--head-dim/--max-tokens)";
  return g;
}

}  // namespace dcp
