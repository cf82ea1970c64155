// The host backend: a CPU model of the direct path's protocol, run by the same
// worker processes as the GPU backend. Receive buffers live in POSIX shared
// memory, one segment per (group, rank), mapped by every rank of the group;
// flags use release/acquire atomics exactly where the kernel uses system-scope
// release/acquire. The combine uses the kernel's fp32 arithmetic. Graph mode is
// modelled as eager calls (there is nothing to capture on a CPU); pipelined
// calls run back to back with no barrier, which is all the protocol needs.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "case.h"
#include "rendezvous.h"

namespace dcp {

// Builds this rank's segment, exchanges names with the group (two barriers),
// maps every peer's segment and unlinks its own name once every peer has mapped
// it. Throws UsageError when /dev/shm cannot hold the workspace.
std::unique_ptr<RankBackend> make_host_backend(const BackendConfig& config, Rendezvous& rendezvous);

// The host harness for plugins that declare DCP_MEMORY_HOST: the plugin's
// regions in one shared-memory segment per rank (payload and control regions;
// local ones in private memory), every call run to completion on this thread.
// Graph cases run as eager calls, as in the host model.
std::unique_ptr<RankBackend> make_host_plugin_backend(const BackendConfig& config,
                                                      Rendezvous& rendezvous);

// Deterministic segment name, so the supervisor can unlink it after a crash:
// /dcp-check-<run_id>-g<dcp_size>x<group_idx>-r<global_rank>.
std::string host_segment_name(const std::string& run_id, int dcp_size, int group_idx,
                              int global_rank);
// A host plugin's segment is host_segment_name(...) + this suffix.
inline constexpr const char* kPluginSegmentSuffix = "-p";
// A second kernel context's segment (Case::num_contexts) adds this suffix.
inline constexpr const char* kContextSegmentSuffix = "-c1";
// Every segment name a run of `world` ranks can create.
std::vector<std::string> host_segment_names(const std::string& run_id, int world);
// Bytes of one rank's segment for a group of dcp_size ranks (mapped sparsely:
// only rows that calls write take memory).
size_t host_segment_bytes(const Geometry& geometry, int dcp_size);

}  // namespace dcp
