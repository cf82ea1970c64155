// Which memory stress the memory-stress cases (Case::mstress) run on this GPU
// model: the setting `dcp-check litmus` found best there (a cache file the
// litmus command writes), else a built-in default measured on an H100. The
// supervisor (run header, JSON) and every GPU worker (the stress kernel) call
// memory_stress_for() with the same GPU name and the same file, so they agree
// without a message.
#pragma once

#include <string>

#include "litmus.h"

namespace dcp {

struct MemoryStressConfig {
  LitmusStress stress;  // blocks: per SM (multiplied by the device's SMs by the worker)
  // One line for the header: the setting and where it came from.
  std::string description;
};

// $DCP_CHECK_CACHE_DIR, else $XDG_CACHE_HOME/dcp-check, else
// $HOME/.cache/dcp-check; then "/memory-stress.json".
std::string memory_stress_cache_path();

// The calibrated setting of `gpu_name` in `cache_path`, or the default when
// the file or the entry is missing (said in the description). A malformed
// file is the default too, said so.
MemoryStressConfig memory_stress_for(const std::string& gpu_name, const std::string& cache_path);

// Stores `best` (blocks per SM, as stress_sweep gives them per SM) for
// `gpu_name`, with its measured rate and the calibration's description,
// keeping other GPUs' entries. Throws HarnessError when it cannot write.
void save_memory_stress(const std::string& cache_path, const std::string& gpu_name,
                        const LitmusStress& best, int blocks_per_sm, double weak_per_million);

}  // namespace dcp
