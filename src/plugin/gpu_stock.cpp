// The stock path's NCCL transport (see gpu_stock.h).
#include "gpu_stock.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>

#include "cuda_check.h"
#include "errors.h"
#include "hex.h"

namespace dcp {
namespace {

std::string bus_id_of(int device, int rank) {
  char buf[64] = {};
  CUDA_CHECK(rank, HarnessError, cudaDeviceGetPCIBusId(buf, sizeof buf, device));
  return buf;
}

// NCCL refuses two ranks of one communicator on one GPU; say so before it does.
void require_distinct_gpus(const StockConfig& cfg, Rendezvous& rendezvous) {
  const std::vector<std::string> buses = rendezvous.allgather(
      cfg.key_prefix + "/stock-gpus", cfg.members, bus_id_of(cfg.device, cfg.global_rank));
  std::map<std::string, int> first_rank;
  for (size_t i = 0; i < buses.size(); ++i) {
    const auto [it, fresh] = first_rank.emplace(buses[i], cfg.members[i]);
    if (!fresh) {
      DCP_THROW(UsageError,
                "the stock path needs one GPU per rank (NCCL refuses two ranks on one GPU), but "
                "ranks {} and {} of a DCP{} group share GPU {}; run on a machine with at least "
                "as many GPUs as ranks, or use --impl direct",
                it->second, cfg.members[i], cfg.members.size(), buses[i]);
    }
  }
}

}  // namespace

StockTransport::StockTransport(const StockConfig& cfg, Rendezvous& rendezvous) : cfg_(cfg) {
  const int rank = cfg_.global_rank;
  const int W = static_cast<int>(cfg_.members.size());
  CUDA_CHECK(rank, HarnessError, cudaSetDevice(cfg_.device));
  require_distinct_gpus(cfg_, rendezvous);
  nccl_ = NcclLibrary::load();
  // NVLink SHARP (multicast) can take a shared host's GPUs down; the
  // all-to-all does not need it. Respect an explicit user setting.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  ncclUniqueId id{};
  if (cfg_.group_rank == 0) {
    NCCL_CHECK(*nccl_, rank, HarnessError, nccl_->api().get_unique_id(&id));
  }
  const std::vector<std::string> ids =
      rendezvous.allgather(cfg_.key_prefix + "/nccl-id", cfg_.members,
                           cfg_.group_rank == 0 ? hex_encode(&id, sizeof id) : std::string());
  DCP_CHECK(!ids.empty() && hex_decode(ids[0], &id, sizeof id), HarnessError,
            "malformed NCCL unique id from rank {}", cfg_.members[0]);
  NCCL_CHECK(*nccl_, rank, HarnessError,
             nccl_->api().comm_init_rank(&comm_, W, id, cfg_.group_rank));
  StockLayout layout;
  layout.dcp_size = W;
  layout.num_tokens = cfg_.max_tokens;
  layout.heads_per_rank = cfg_.heads_per_rank;
  layout.head_dim = cfg_.head_dim;
  send_out_.ensure(W * layout.out_chunk_bytes(), rank);
  recv_out_.ensure(W * layout.out_chunk_bytes(), rank);
  send_lse_.ensure(W * layout.lse_chunk_bytes(), rank);
  recv_lse_.ensure(W * layout.lse_chunk_bytes(), rank);
}

StockTransport::~StockTransport() {
  // Abort, not destroy: it never waits for peers, so teardown cannot hang on
  // a rank that died.
  if (comm_ != nullptr) nccl_->api().comm_abort(comm_);
}

void StockTransport::fill_params(int num_tokens, const void* partial_output,
                                 const void* partial_lse, int64_t out_stride, int64_t lse_stride,
                                 ElemType out, ElemType lse, bool base_e, const int32_t* seq_lens,
                                 const int32_t* query_start_loc, int num_seqs, void* output,
                                 StockPackParams* pack, StockCombineParams* combine) const {
  const int W = static_cast<int>(cfg_.members.size());
  pack->partial_output = partial_output;
  pack->partial_lse = partial_lse;
  pack->out_token_stride = out_stride;
  pack->lse_token_stride = lse_stride;
  pack->out_dtype = out;
  pack->lse_dtype = lse;
  pack->lse_base_e = base_e ? 1 : 0;
  pack->num_tokens = num_tokens;
  pack->dcp_size = W;
  pack->heads_per_rank = cfg_.heads_per_rank;
  pack->head_dim = cfg_.head_dim;
  pack->seq_lens = seq_lens;
  pack->query_start_loc = query_start_loc;
  pack->num_seqs = num_seqs;
  pack->send_out = send_out_.data();
  pack->send_lse = static_cast<float*>(send_lse_.data());
  combine->recv_out = recv_out_.data();
  combine->recv_lse = static_cast<const float*>(recv_lse_.data());
  combine->out_dtype = out;
  combine->num_tokens = num_tokens;
  combine->dcp_size = W;
  combine->heads_per_rank = cfg_.heads_per_rank;
  combine->head_dim = cfg_.head_dim;
  combine->output = output;
  if (std::string why = validate_stock_pack(*pack); !why.empty()) {
    DCP_THROW(UsageError, "case cannot run on the stock path: {}", why);
  }
  if (std::string why = validate_stock_combine(*combine); !why.empty()) {
    DCP_THROW(UsageError, "case cannot run on the stock path: {}", why);
  }
}

void StockTransport::enqueue(const StockPackParams& pack, const StockCombineParams& combine,
                             cudaStream_t stream) {
  const int rank = cfg_.global_rank;
  const int W = static_cast<int>(cfg_.members.size());
  StockLayout layout;
  layout.dcp_size = W;
  layout.num_tokens = pack.num_tokens;
  layout.heads_per_rank = cfg_.heads_per_rank;
  layout.head_dim = cfg_.head_dim;
  const size_t out_chunk = layout.out_chunk_bytes();
  const size_t lse_chunk = layout.lse_chunk_bytes();
  CUDA_CHECK(rank, KernelFault, launch_stock_pack(pack, stream));
  const NcclApi& api = nccl_->api();
  auto* send_out = static_cast<const uint8_t*>(pack.send_out);
  auto* recv_out = static_cast<uint8_t*>(const_cast<void*>(combine.recv_out));
  auto* send_lse = reinterpret_cast<const uint8_t*>(pack.send_lse);
  auto* recv_lse = reinterpret_cast<uint8_t*>(const_cast<float*>(combine.recv_lse));
  NCCL_CHECK(*nccl_, rank, KernelFault, api.group_start());
  ncclResult_t res = ncclSuccess;
  for (int peer = 0; peer < W && res == ncclSuccess; ++peer) {
    res = api.send(send_out + peer * out_chunk, out_chunk, ncclUint8, peer, comm_, stream);
    if (res == ncclSuccess) {
      res = api.recv(recv_out + peer * out_chunk, out_chunk, ncclUint8, peer, comm_, stream);
    }
    if (res == ncclSuccess) {
      res = api.send(send_lse + peer * lse_chunk, lse_chunk, ncclUint8, peer, comm_, stream);
    }
    if (res == ncclSuccess) {
      res = api.recv(recv_lse + peer * lse_chunk, lse_chunk, ncclUint8, peer, comm_, stream);
    }
  }
  const ncclResult_t end = api.group_end();  // always close the group
  NCCL_CHECK(*nccl_, rank, KernelFault, res);
  NCCL_CHECK(*nccl_, rank, KernelFault, end);
  CUDA_CHECK(rank, KernelFault, launch_stock_combine(combine, stream));
}

}  // namespace dcp
