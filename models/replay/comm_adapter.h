// Maps the replay's Communicator onto the network backend (p2p sends) and the NCCL-like
// collective engine (DP collectives). A pipeline's sends between two ranks go over their one
// connection (NCCL's p2p channels, connected once): the same fabric path for every message
// (network.h send_flow, flow kPipelineFlow); the replay tag names the delivery.
#pragma once

#include "models/collective/collective.h"
#include "models/network/network.h"
#include "models/replay/executor.h"

namespace ct::replay {

inline collective::Op collective_op(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return collective::Op::all_reduce;
    case CollectiveKind::reduce_scatter:
      return collective::Op::reduce_scatter;
    case CollectiveKind::all_gather:
      return collective::Op::all_gather;
    case CollectiveKind::all_to_all:
      return collective::Op::all_to_all;
  }
  return collective::Op::all_reduce;
}

inline constexpr uint64_t kPipelineFlow = 0x50495045ULL;

class CommAdapter final : public Communicator,
                          private network::DeliveryHandler,
                          private collective::CompletionHandler {
 public:
  CommAdapter(network::Network& net, collective::CollectiveEngine& engine) : net_(net), engine_(engine) {}

  void send(int src_gpu, int dst_gpu, sim::Bytes bytes, CommHandler& handler, uint64_t tag) override {
    handler_ = &handler;
    net_.send_flow(src_gpu, dst_gpu, kPipelineFlow, bytes, *this, tag);
  }

  void collective(CollectiveKind kind, std::span<const int> gpus, sim::Bytes bytes, CommHandler& handler,
                  uint64_t tag, uint64_t group_hash) override {
    handler_ = &handler;
    engine_.start(collective_op(kind), gpus, bytes, *this, tag, group_hash);
  }

 private:
  void on_delivered(uint64_t tag) override { handler_->on_comm_done(tag); }
  void on_complete(uint64_t tag) override { handler_->on_comm_done(tag); }

  network::Network& net_;
  collective::CollectiveEngine& engine_;
  CommHandler* handler_ = nullptr;
};

}  // namespace ct::replay
