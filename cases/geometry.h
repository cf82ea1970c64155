// Named geometry presets from public model configs, plus custom geometries.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "case.h"

namespace dcp {

const std::vector<Geometry>& geometry_presets();
std::optional<Geometry> find_geometry(std::string_view name);
// A custom geometry (name "", written h<H>d<D>m<maxT>[p<storage>] in ids).
Geometry custom_geometry(int heads_per_rank, int head_dim, int max_tokens, int storage_heads = 0);

}  // namespace dcp
