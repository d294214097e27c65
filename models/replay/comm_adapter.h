// Maps the replay's Communicator onto the network backend (p2p sends) and the NCCL-like
// collective engine (DP collectives). The replay tag doubles as the ECMP flow id of a send,
// so a given pipeline message always takes the same fabric path.
#pragma once

#include "models/collective/collective.h"
#include "models/network/network.h"
#include "models/replay/executor.h"

namespace ct::replay {

class CommAdapter final : public Communicator,
                          private network::DeliveryHandler,
                          private collective::CompletionHandler {
 public:
  CommAdapter(network::Network& net, collective::CollectiveEngine& engine) : net_(net), engine_(engine) {}

  void send(int src_gpu, int dst_gpu, sim::Bytes bytes, CommHandler& handler, uint64_t tag) override {
    handler_ = &handler;
    net_.send(src_gpu, dst_gpu, bytes, *this, tag);
  }

  void collective(CollectiveKind kind, std::span<const int> gpus, sim::Bytes bytes, CommHandler& handler,
                  uint64_t tag) override {
    handler_ = &handler;
    const collective::Op op = kind == CollectiveKind::all_reduce       ? collective::Op::all_reduce
                              : kind == CollectiveKind::reduce_scatter ? collective::Op::reduce_scatter
                              : kind == CollectiveKind::all_to_all     ? collective::Op::all_to_all
                                                                       : collective::Op::all_gather;
    engine_.start(op, gpus, bytes, *this, tag);
  }

 private:
  void on_delivered(uint64_t tag) override { handler_->on_comm_done(tag); }
  void on_complete(uint64_t tag) override { handler_->on_comm_done(tag); }

  network::Network& net_;
  collective::CollectiveEngine& engine_;
  CommHandler* handler_ = nullptr;
};

}  // namespace ct::replay
