#include "models/scenario/layouts.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/collective/plan_cache.h"
#include "models/network/analytical_network.h"
#include "models/network/chain_cache.h"
#include "models/network/cluster.h"
#include "models/replay/step_model.h"
#include "models/scenario/loader.h"
#include "models/scenario/machine_memory.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/runner.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"

namespace ct::scenario {
namespace {

std::string problems_text(const ScenarioError& e) {
  std::string out;
  for (const std::string& p : e.problems()) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// One layout against the shared cluster: the figures `run` reports for it (runner.cpp
// step_report), without the report around them.
// What every layout's step shares: the cluster, and the chains and plans of its collectives
// (a layout with the same data-parallel groups as an earlier one finds them built).
struct Shared {
  const network::Cluster& cluster;
  network::ChainCache chains;
  collective::PlanCache plans;
  std::shared_ptr<const std::vector<double>> capacities;  // network::resource_capacities(cluster)
  double available_bytes = 0;                             // this machine's, at the batch's start
};

LayoutOutcome evaluate_one(const Config& c, Shared& shared) {
  LayoutOutcome o;
  const workload::JobSpec job = job_spec(c);
  o.gpus = workload::gpus_used(job.parallelism);
  o.fits = true;
  for (const workload::MemoryBreakdown& m : workload::memory_per_stage(job, memory_options(c))) {
    o.peak_memory_bytes = std::max(o.peak_memory_bytes, m.total);
    o.fits = o.fits && m.fits;
  }
  if (std::string why = step_not_computed(c); !why.empty()) {
    o.error = why;
    return o;
  }
  replay::StepInput in = step_input(c);
  in.shared_cluster = &shared.cluster;
  in.network.shared_capacities = shared.capacities;
  // Chains and plans routed with the base's queue pairs; a layout with others routes its own.
  if (c.network.qps_per_connection == shared.chains.queue_pairs()) {
    in.network.shared_chains = &shared.chains;
    in.collectives.shared_plans = &shared.plans;
  }
  in.network.link_statistics = false;  // a row reports no link figures
  in.power_series = false;             // nor power
  if (std::string problem = step_memory_problem(in, shared.available_bytes); !problem.empty()) {
    o.error = problem;
    return o;
  }
  const replay::StepResult r = replay::simulate_step(in);
  o.events = r.events;
  if (r.failure) {
    o.error = "faults stopped the job before the step ended (run this layout for where it waited)";
    return o;
  }
  o.step_time_s = r.step_time_s;
  o.mfu = r.mfu;
  o.hfu = r.hfu;
  o.tflops_per_gpu = r.tflops_per_gpu;
  o.tokens_per_s = r.tokens_per_s;
  o.tokens_per_s_per_gpu = r.tokens_per_s_per_gpu;
  o.breakdown = r.breakdown;
  return o;
}

}  // namespace

std::vector<LayoutOutcome> evaluate_layouts(const Config& base, size_t count,
                                            const std::function<Config(size_t)>& make_config, int threads) {
  std::vector<LayoutOutcome> out(count);
  if (count == 0) return out;
  const auto cluster = std::make_unique<const network::Cluster>(cluster_spec(base));
  const uint64_t epoch = cluster->topology().routing_epoch();
  Shared shared{*cluster, network::ChainCache(epoch, base.network.qps_per_connection),
                collective::PlanCache(epoch),
                std::make_shared<const std::vector<double>>(network::resource_capacities(*cluster)),
                available_memory_bytes()};
  tbb::task_arena arena(threads > 0 ? threads : tbb::info::default_concurrency());
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, count, 1), [&](const tbb::blocked_range<size_t>& range) {
      for (size_t i = range.begin(); i != range.end(); ++i) {
        try {
          out[i] = evaluate_one(make_config(i), shared);
        } catch (const ScenarioError& e) {
          out[i] = LayoutOutcome{};
          out[i].error = problems_text(e);
        } catch (const std::invalid_argument& e) {  // a layout the workload model refuses
          out[i] = LayoutOutcome{};
          out[i].error = e.what();
        }
      }
    });
  });
  return out;
}

}  // namespace ct::scenario
