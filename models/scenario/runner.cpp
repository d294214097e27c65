#include "models/scenario/runner.h"

#include <chrono>

#include "models/scenario/model_configs.h"
#include "models/workload/flops.h"
#include "models/workload/memory.h"
#include "models/workload/parameters.h"

namespace ct::scenario {
namespace {

nlohmann::json memory_report(const Config& c) {
  const workload::JobSpec job = job_spec(c);
  workload::MemoryOptions options;
  options.capacity_bytes = static_cast<int64_t>(gpu_spec(c).hbm_bytes);
  const workload::MemoryBreakdown m = workload::peak_memory_per_gpu(job, options);
  return {{"peak_bytes", m.total},
          {"capacity_bytes", m.capacity},
          {"fits", m.fits},
          {"stage", m.stage},
          {"weights_bytes", m.weights},
          {"gradients_bytes", m.gradients},
          {"optimizer_bytes", m.optimizer},
          {"activations_bytes", m.activations},
          {"temporary_bytes", m.temporary},
          {"in_flight_microbatches", m.in_flight_microbatches}};
}

}  // namespace

nlohmann::json run(const Config& c, const RunOptions& options) {
  (void)options;
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json report;
  report["name"] = c.name;
  report["seed"] = c.seed;
  report["cluster"] = {{"gpus", c.cluster_gpus()}, {"nodes", c.cluster.nodes}, {"gpu", c.cluster.gpu}};
  nlohmann::json not_computed = nlohmann::json::object();
  if (c.has("training_job")) {
    const workload::JobSpec job = job_spec(c);
    const auto params = workload::count_parameters(job.model);
    report["model"] = {{"parameters", params.total},
                       {"active_parameters", params.active},
                       {"model_flops_per_iteration", workload::model_flops_per_iteration(job)},
                       {"hardware_flops_per_iteration", workload::hardware_flops_per_iteration(job)}};
    report["memory"] = memory_report(c);
    not_computed["step_time_s"] = "the step replay is not built yet (issue: training step graphs and replay)";
  } else {
    not_computed["traffic"] = "network-only traffic studies are not built yet";
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report["sim"] = {{"events", 0}, {"wall_s", wall}, {"events_per_s", 0.0}};
  if (!not_computed.empty()) report["not_computed"] = not_computed;
  return report;
}

}  // namespace ct::scenario
