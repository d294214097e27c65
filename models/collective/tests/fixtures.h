// Shared helpers of the collective tests.
#pragma once

#include <numeric>
#include <vector>

#include "models/collective/collective.h"
#include "models/network/tests/fixtures.h"

namespace ct::collective::testing {

using network::testing::small_cluster;

class Done final : public CompletionHandler {
 public:
  explicit Done(const sim::Simulation& sim) : sim_(sim) {}
  void on_complete(uint64_t tag) override {
    if (times.size() <= tag) times.resize(tag + 1, -1.0);
    times[tag] = sim_.now().seconds();
    ++count;
  }
  std::vector<double> times;
  int count = 0;

 private:
  const sim::Simulation& sim_;
};

inline std::vector<int> first_gpus(int n) {
  std::vector<int> g(static_cast<size_t>(n));
  std::iota(g.begin(), g.end(), 0);
  return g;
}

// Runs one collective alone on a fresh simulation; returns its time in seconds.
inline double run_one(const network::Cluster& c, const std::string& mode, Op op,
                      const std::vector<int>& group, double bytes, CollectiveParams params = {}) {
  sim::Simulation sim;
  auto net = network::make_network(mode, sim, c);
  CollectiveEngine engine(sim, *net, c, params);
  Done done(sim);
  engine.start(op, group, sim::Bytes{static_cast<int64_t>(bytes)}, done, 0);
  sim.run();
  EXPECT_EQ(done.count, 1);
  return done.times.empty() ? -1.0 : done.times[0];
}

}  // namespace ct::collective::testing
