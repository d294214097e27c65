// PHOLD (Fujimoto 1990) on the engine's event queue: N logical processes share a constant
// population of pending events; each event, when it fires at LP i, schedules one new event
// at now + 100 ns + Exp(mean 1 us) on an LP drawn uniformly (LP i's own random stream).
// Prints events/s as the benchmark's items_per_second.
#include <benchmark/benchmark.h>

#include <vector>

#include "sim/simulation.h"

namespace {

using namespace ct::sim;

class Phold final : public EventHandler {
 public:
  Phold(Simulation& sim, uint64_t lps, uint64_t population) : sim_(sim) {
    for (uint64_t i = 0; i < lps; ++i) streams_.push_back(sim.rng(i));
    Rng seed_rng = sim.rng(lps);
    for (uint64_t e = 0; e < population; ++e) {
      sim_.schedule_in(Duration::from_seconds(seed_rng.exponential(1e-6)), *this, seed_rng.below(lps));
    }
  }
  void on_event(uint64_t lp) override {
    Rng& rng = streams_[lp];
    const Duration delay = Duration::ns(100) + Duration::from_seconds(rng.exponential(1e-6));
    sim_.schedule_in(delay, *this, rng.below(streams_.size()));
  }

 private:
  Simulation& sim_;
  std::vector<Rng> streams_;
};

void BM_Phold(benchmark::State& state) {
  const auto population = static_cast<uint64_t>(state.range(0));
  Simulation sim(1);
  Phold model(sim, 1024, population);
  constexpr uint64_t kBatch = 1000000;
  uint64_t events = 0;
  Time horizon = Time::zero();
  for (auto _ : state) {
    // Run about kBatch events: the population advances ~population/1.1us per us.
    const double per_ps = static_cast<double>(population) / 1.1e6;
    horizon = horizon + Duration::ps(static_cast<int64_t>(static_cast<double>(kBatch) / per_ps));
    events += sim.run_until(horizon);
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["pending"] = static_cast<double>(sim.pending());
}

BENCHMARK(BM_Phold)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
