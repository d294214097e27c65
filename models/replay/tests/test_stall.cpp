// The executor's stops and stall diagnosis (issue 19): crashed and hung ranks, what their peers
// wait in, and mismatched collectives, on hand-built programs with a fixed-latency network.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/replay/executor.h"
#include "sim/simulation.h"

using namespace ct;
using namespace ct::replay;

namespace {

// Every send and collective takes 1 ms.
class FixedComm final : public Communicator, public sim::EventHandler {
 public:
  explicit FixedComm(sim::Simulation& sim) : sim_(sim) {}
  void send(int, int, sim::Bytes, CommHandler& handler, uint64_t tag) override { later(handler, tag); }
  void collective(CollectiveKind, std::span<const int>, sim::Bytes, CommHandler& handler, uint64_t tag,
                  uint64_t) override {
    later(handler, tag);
  }
  void on_event(uint64_t k) override { pending_[k].first->on_comm_done(pending_[k].second); }

 private:
  void later(CommHandler& h, uint64_t tag) {
    pending_.emplace_back(&h, tag);
    sim_.schedule_in(sim::Duration::from_seconds(1e-3), *this, pending_.size() - 1);
  }
  sim::Simulation& sim_;
  std::vector<std::pair<CommHandler*, uint64_t>> pending_;
};

Instr compute(double seconds, int32_t after = -1) {
  Instr i;
  i.seconds = seconds;
  i.after = after;
  return i;
}

Instr collective(CollectiveKind kind, int32_t after) {
  Instr i;
  i.kind = InstrKind::collective;
  i.stream = Stream::dp;
  i.category = Category::dp;
  i.collective = kind;
  i.group = 0;
  i.bytes = 1 << 20;
  i.after = after;
  return i;
}

Instr step_end(int32_t after) {
  Instr i = compute(0, after);
  i.category = Category::step_end;
  return i;
}

// n ranks: compute 10 ms, all-reduce over all, compute 10 ms, step end.
StepProgram ring_program(int n) {
  StepProgram p;
  Group g;
  for (int r = 0; r < n; ++r) {
    RankProgram rank;
    rank.gpu = r;
    rank.instrs = {compute(0.01), collective(CollectiveKind::all_reduce, 0), compute(0.01, 1), step_end(2)};
    p.ranks.push_back(rank);
    g.gpus.push_back(r);
    g.simulated.push_back(r);
  }
  p.groups.push_back(g);
  return p;
}

ExecutionResult execute_with(const StepProgram& p, std::vector<RankStop> stops) {
  sim::Simulation sim;
  FixedComm comm(sim);
  ExecutorOptions options;
  options.stops = std::move(stops);
  return execute(p, sim, comm, options);
}

}  // namespace

TEST(Stall, HealthyProgramHasNoStall) {
  const ExecutionResult r = execute_with(ring_program(4), {});
  EXPECT_FALSE(r.stall.has_value());
  EXPECT_NEAR(r.ranks[0].step_end_s[0], 0.021, 1e-9);  // 10 ms + 1 ms + 10 ms
}

TEST(Stall, ACrashedRankLeavesItsPeersInTheCollective) {
  // Rank 2 crashes at 5 ms, inside its first compute: it never joins the all-reduce.
  const ExecutionResult r = execute_with(ring_program(4), {{2, 0.005, true}});
  ASSERT_TRUE(r.stall.has_value());
  const Stall& s = *r.stall;
  ASSERT_EQ(s.ranks.size(), 4U);
  EXPECT_EQ(s.ranks[2].state, RankWait::State::killed);
  for (const int k : {0, 1, 3}) {
    const RankWait& w = s.ranks[static_cast<size_t>(k)];
    EXPECT_EQ(w.state, RankWait::State::waiting);
    EXPECT_EQ(w.waiting_in, "dp_all_reduce");
    EXPECT_EQ(w.group, 0);
    EXPECT_EQ(w.seq, 0);
    EXPECT_NEAR(w.since_s, 0.01, 1e-12);  // entered when its compute ended
    EXPECT_EQ(w.missing, std::vector<int>{2});
    EXPECT_TRUE(w.mismatched.empty());
  }
  EXPECT_NEAR(s.first_wait_s, 0.01, 1e-12);
  EXPECT_EQ(s.stop_acted, std::vector<bool>{true});
}

TEST(Stall, ACrashDuringTheCollectiveKillsItButAHangLetsItFinish) {
  // At 10.5 ms every rank is inside the all-reduce (10-11 ms). A crash voids it; a hang lets
  // the launched collective complete, and the rank then issues nothing more.
  const ExecutionResult crash = execute_with(ring_program(4), {{1, 0.0105, true}});
  ASSERT_TRUE(crash.stall.has_value());
  EXPECT_EQ(crash.stall->ranks[0].waiting_in, "dp_all_reduce");
  EXPECT_TRUE(crash.stall->ranks[0].missing.empty());  // everyone joined; a member died in it
  const ExecutionResult hang = execute_with(ring_program(4), {{1, 0.0105, false}});
  ASSERT_TRUE(hang.stall.has_value());
  EXPECT_EQ(hang.stall->ranks[1].state, RankWait::State::hung);
  for (const int k : {0, 2, 3})
    EXPECT_EQ(hang.stall->ranks[static_cast<size_t>(k)].state, RankWait::State::finished);
  EXPECT_NEAR(hang.ranks[0].step_end_s[0], 0.021, 1e-9);
}

TEST(Stall, AStopAfterTheWorkDoesNotAct) {
  const ExecutionResult r = execute_with(ring_program(2), {{0, 1.0, true}});
  EXPECT_FALSE(r.stall.has_value());
}

TEST(Stall, RanksThatEnterDifferentCollectivesAreMismatchedNotMissing) {
  // Rank 1 skips the all-reduce and enters an all-gather of the same group: NCCL never matches
  // them, so both wait, each naming the other as mismatched.
  StepProgram p = ring_program(2);
  p.ranks[1].instrs[1].collective = CollectiveKind::all_gather;
  const ExecutionResult r = execute_with(p, {});
  ASSERT_TRUE(r.stall.has_value());
  EXPECT_EQ(r.stall->ranks[0].waiting_in, "dp_all_reduce");
  EXPECT_EQ(r.stall->ranks[1].waiting_in, "dp_all_gather");
  EXPECT_TRUE(r.stall->ranks[0].missing.empty());
  EXPECT_EQ(r.stall->ranks[0].mismatched, std::vector<int>{1});
  EXPECT_EQ(r.stall->ranks[1].mismatched, std::vector<int>{0});
  EXPECT_NE(stall_message(*r.stall).find("entered a different collective"), std::string::npos);
}

TEST(Stall, AReceiveFromACrashedRankWaitsForIt) {
  // Rank 0 sends to rank 1 after 10 ms of compute; rank 0 crashes at 5 ms.
  StepProgram p;
  RankProgram a, b;
  a.gpu = 0;
  b.gpu = 1;
  Instr send;
  send.kind = InstrKind::send;
  send.stream = Stream::p2p;
  send.category = Category::pp;
  send.peer = 1;
  send.peer_instr = 0;
  send.bytes = 1 << 20;
  send.after = 0;
  a.instrs = {compute(0.01), send, step_end(1)};
  Instr recv;
  recv.kind = InstrKind::recv;
  recv.stream = Stream::none;
  recv.category = Category::pp;
  recv.peer = 0;
  recv.peer_instr = 1;
  b.instrs = {recv, compute(0.01, 0), step_end(1)};
  p.ranks = {a, b};
  const ExecutionResult r = execute_with(p, {{0, 0.005, true}});
  ASSERT_TRUE(r.stall.has_value());
  EXPECT_EQ(r.stall->ranks[1].waiting_in, "pp_recv");
  EXPECT_EQ(r.stall->ranks[1].missing, std::vector<int>{0});
}
