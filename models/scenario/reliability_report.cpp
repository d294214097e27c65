#include "models/scenario/reliability_report.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/reliability/campaign.h"
#include "models/reliability/checkpoint_interval.h"
#include "models/reliability/goodput.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/power_report.h"
#include "models/storage/checkpoint.h"
#include "models/storage/checkpoint_timing.h"
#include "models/storage/data_loading.h"
#include "models/topology/topology.h"

namespace ct::scenario {
namespace {

// JSON has no infinity: an interval or MTBF that is infinite (nothing fails) is null.
nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// The reliability models throw std::invalid_argument naming the scenario key.
template <typename Fn>
auto keyed(Fn&& fn) {
  try {
    return fn();
  } catch (const std::invalid_argument& e) {
    throw ScenarioError({e.what()});
  }
}

// Switches on the job's paths: the fabric's switches in proportion to the nodes it holds.
int job_switches(const Config& c, int job_nodes) {
  const int total = keyed([&] { return topology::switch_count(fabric_config(c)); });
  return static_cast<int>(std::ceil(static_cast<double>(total) * job_nodes / c.cluster.nodes - 1e-9));
}

// An asynchronous flush over the compute fabric (cluster.storage.network = compute) takes a
// share of every writing node's NIC bandwidth while it lasts:
//   share = (write rate / writing nodes) / (NICs per node x NIC rate), at most 0.9.
// First order: the exposed inter-node communication of a step (data- and pipeline-parallel;
// tensor parallelism stays on NVLink) stretches by 1 / (1 - share), so a step during the
// flush is longer by  delta = (exposed_dp + exposed_pp) x share / (1 - share),  and each
// checkpoint costs  flush_s x delta / (step + delta)  seconds of training on top of its
// blocking part. The flush is not slowed in turn (its rate is the storage's).
struct FlushContention {
  double nic_share = 0.0;
  double step_slowdown_s = 0.0;
  double cost_s = 0.0;
};

FlushContention flush_contention(const Config& c, const storage::CheckpointSize& size,
                                 const storage::CheckpointTiming& timing, const StepFigures& step) {
  const double step_time_s = step.step_time_s;
  FlushContention out;
  if (c.cluster.storage.network != "compute" || timing.flush <= Duration::zero() || size.writer_nodes < 1)
    return out;
  const double nic_bytes_per_s = c.cluster.nics_per_node * c.cluster.nic.bytes_per_second();
  if (!(nic_bytes_per_s > 0)) return out;
  out.nic_share = std::min(0.9, timing.write_bytes_per_s / size.writer_nodes / nic_bytes_per_s);
  const double exposed = step.exposed_dp_comm_s + step.exposed_pp_comm_s;
  out.step_slowdown_s = exposed * out.nic_share / (1.0 - out.nic_share);
  out.cost_s = timing.flush.seconds() * out.step_slowdown_s / (step_time_s + out.step_slowdown_s);
  return out;
}

// Replica 0's phases as a table (t_s, phase, it_w: the step's mean IT power while training,
// the idle draw otherwise), at most kTimelineRows rows, and how often the whole job stops
// (training -> anything else: the cluster's power falls by the stop swing each time).
constexpr size_t kTimelineRows = 20000;

void add_campaign_timeline(const reliability::CampaignSpec& spec, const StepFigures& step,
                           nlohmann::json& report) {
  reliability::CampaignSpec one = spec;
  one.record_phases = true;
  const reliability::ReplicaResult r = reliability::run_replica(one, 0);
  const double train_w = step.power ? step.power->cluster_mean_w : 0.0;
  const double idle_w = step.power ? step.power->idle_w : 0.0;
  nlohmann::json rows = nlohmann::json::array();
  int stops = 0, failure_stops = 0;
  for (size_t i = 0; i < r.phases.size(); ++i) {
    const reliability::PhaseChange& p = r.phases[i];
    const bool training = p.phase == reliability::CampaignPhase::train;
    if (i > 0 && r.phases[i - 1].phase == reliability::CampaignPhase::train && !training) {
      ++stops;
      if (p.phase == reliability::CampaignPhase::detect) ++failure_stops;
    }
    if (rows.size() < kTimelineRows) {
      rows.push_back({{"t_s", p.t_s},
                      {"phase", reliability::campaign_phase_name(p.phase)},
                      {"it_w", training ? train_w : idle_w}});
    }
  }
  const double days = spec.duration_s / reliability::kSecondsPerDay;
  report["tables"]["campaign_phases"] = rows;
  if (step.power) {
    report["power"]["job_stops_per_day"] = stops / days;
    report["power"]["failure_stops_per_day"] = failure_stops / days;
  }
}

nlohmann::json by_class(const reliability::ClassMeans& means) {
  nlohmann::json out = nlohmann::json::object();
  for (int k = 0; k < reliability::kFailureClasses; ++k) {
    out[reliability::failure_class_name(static_cast<reliability::FailureClass>(k))] =
        means[static_cast<size_t>(k)];
  }
  return out;
}

}  // namespace

namespace {

// Each failure rate: its scenario key, where the scenario holds it, where the model takes it.
struct RateField {
  const char* key;
  double FailuresSection::*from;
  double reliability::FailureModel::*to;
};

#define CT_RATE(name) \
  RateField { "failures." #name, &FailuresSection::name, &reliability::FailureModel::name }
constexpr RateField kRates[] = {CT_RATE(node_failure_rate_per_day),     CT_RATE(gpu_failure_rate_per_day),
                                CT_RATE(hbm_failure_rate_per_day),      CT_RATE(nic_failure_rate_per_day),
                                CT_RATE(link_failure_rate_per_day),     CT_RATE(switch_failure_rate_per_day),
                                CT_RATE(software_failure_rate_per_day), CT_RATE(hang_failure_rate_per_day)};
#undef CT_RATE

}  // namespace

reliability::FailureModel failure_model(const Config& c) {
  const FailuresSection& f = c.failures;
  reliability::FailureModel m;
  if (f.profile == "llama3") {
    std::vector<std::string> problems;
    for (const RateField& r : kRates) {
      if (f.*r.from != 0.0) {
        problems.push_back(
            std::string(r.key) + ": got " + std::to_string(f.*r.from) +
            ", expected 0 with failures.profile = llama3 (the profile sets every rate; scale them "
            "with failures.rate_scale or use profile custom)");
      }
    }
    if (!problems.empty()) throw ScenarioError(std::move(problems));
    m = reliability::llama3_profile();
  } else {
    for (const RateField& r : kRates) m.*r.to = f.*r.from;
  }
  for (const RateField& r : kRates) m.*r.to *= f.rate_scale;
  m.distribution = keyed([&] { return reliability::parse_failure_distribution(f.distribution); });
  m.weibull_shape = f.weibull_shape;
  m.latent_defect_fraction = f.latent_defect_fraction;
  m.latent_defect_mean_s = f.latent_defect_mean.seconds();
  return m;
}

namespace {

// report["storage"]: the checkpoint's size and timing, its flush's cost, and the data loader.
nlohmann::json storage_section(const Config& c, const storage::CheckpointSize& size,
                               const storage::CheckpointTiming& timing, const storage::DataLoading& loading,
                               const FlushContention& flush, double step_time_s) {
  const StorageSection& sc = c.cluster.storage;
  return {{"checkpoint_bytes", size.total_bytes},
          {"checkpoint_bytes_per_gpu", size.per_gpu_bytes},
          {"checkpoint_save_s", timing.blocking.seconds()},
          {"checkpoint_flush_s", timing.flush.seconds()},
          {"checkpoint_restore_s", timing.restore.seconds()},
          {"checkpoint_retained_bytes", size.total_bytes_as_double() * c.training_job.checkpoint.keep_last_n},
          {"write_bytes_per_s", timing.write_bytes_per_s},
          {"read_bytes_per_s", timing.read_bytes_per_s},
          {"network", sc.network},
          {"flush_nic_share", flush.nic_share},
          {"step_time_during_flush_s", step_time_s + flush.step_slowdown_s},
          {"flush_cost_s", flush.cost_s},
          {"data_bytes_per_step", loading.bytes_per_step},
          {"loader_stall_s", loading.stall_per_step.seconds()},
          {"loader_keeps_up", loading.keeps_up}};
}

// The campaign of this job: its footprint and failure rates, the recovery path, and the
// checkpoint policy.
reliability::CampaignSpec campaign_spec(const Config& c, const reliability::JobFootprint& footprint,
                                        const reliability::FailureModel& failures,
                                        const storage::CheckpointTiming& timing, int job_nodes,
                                        double interval, double save) {
  reliability::CampaignSpec spec;
  spec.duration_s = c.campaign.duration;
  spec.repeats = c.campaign.repeats;
  spec.seed = static_cast<uint64_t>(c.seed);
  spec.threads = c.campaign.threads;
  spec.job = footprint;
  spec.failures = failures;
  // The spare pool is every node the job does not use.
  spec.recovery.detection_s = c.recovery.detection.seconds();
  spec.recovery.restart_s = c.recovery.restart.seconds();
  spec.recovery.restore_s = timing.restore.seconds();
  spec.recovery.hot_spares = c.cluster.nodes - job_nodes;
  spec.recovery.repair_s = c.recovery.repair.seconds();
  spec.recovery.hang_detection_s = c.training_job.runtime.collective_timeout.seconds();
  spec.recovery.health_check_s = c.recovery.health_check.seconds();
  spec.recovery.health_check_coverage = c.recovery.health_check_coverage;
  spec.checkpoint = {interval, save, timing.flush.seconds()};
  return spec;
}

}  // namespace

namespace {

// Everything the storage and reliability figures are made of, from the scenario and the step.
struct PlanParts {
  workload::JobSpec job;
  storage::StorageSpec storage;
  storage::CheckpointSize size;
  storage::CheckpointTiming timing;
  FlushContention flush;
  reliability::FailureModel failures;
  reliability::JobFootprint footprint;
  CheckpointPlan plan;
};

PlanParts plan_parts(const Config& c, const StepFigures& step) {
  PlanParts p;
  p.job = job_spec(c);
  const StorageSection& sc = c.cluster.storage;
  p.storage = {sc.read, sc.write, sc.metadata_latency, sc.per_node_read, sc.per_node_write, sc.capacity.n};
  const storage::StorageSpec& st = p.storage;
  // A GPU's device-to-host copy: over its host link (GB200/GB300: NVLink-C2C), else its PCIe path.
  const hardware::NodeSpec node = node_spec(c);
  const storage::HostSpec host{c.cluster.gpus_per_node,
                               node.gpu.host_link_bytes_per_s > 0
                                   ? sim::Bandwidth::bytes_per_s(node.gpu.host_link_bytes_per_s)
                                   : node.pcie_rate};
  p.size = storage::checkpoint_size(p.job, c.cluster.gpus_per_node);
  p.timing = keyed(
      [&] { return storage::checkpoint_timing(p.size, st, host, c.training_job.checkpoint.async_save); });
  keyed([&] { storage::check_retention(p.size, c.training_job.checkpoint.keep_last_n, st); });
  p.flush = flush_contention(c, p.size, p.timing, step);
  p.failures = failure_model(c);
  p.footprint = {p.size.nodes, c.cluster.gpus_per_node, p.size.nodes * c.cluster.nics_per_node,
                 c.cluster.nics_per_node, job_switches(c, p.size.nodes)};
  keyed([&] { reliability::validate(p.failures, p.footprint); });
  CheckpointPlan& plan = p.plan;
  plan.mtbf_s = reliability::job_mtbf_s(p.failures, p.footprint);
  // The Young/Daly cost of a checkpoint: its blocking part plus the training it slows while
  // its flush shares the compute fabric.
  plan.blocking_s = p.timing.blocking.seconds();
  plan.flush_s = p.timing.flush.seconds();
  plan.restore_s = p.timing.restore.seconds();
  plan.flush_step_slowdown_s = p.flush.step_slowdown_s;
  plan.save_s = plan.blocking_s + p.flush.cost_s;
  plan.optimal_s = reliability::optimal_interval_s(plan.save_s, plan.mtbf_s);
  const auto& ck = c.training_job.checkpoint;
  plan.interval_s = ck.interval > Duration::zero() ? ck.interval.seconds()
                    : ck.interval_steps > 0        ? ck.interval_steps * step.step_time_s
                                                   : plan.optimal_s;
  plan.job_nodes = p.size.nodes;
  return p;
}

}  // namespace

CheckpointPlan checkpoint_plan(const Config& c, const StepFigures& step) { return plan_parts(c, step).plan; }

void reliability_report(const Config& c, const StepFigures& step, nlohmann::json& report) {
  const double step_time_s = step.step_time_s;
  const PlanParts parts = plan_parts(c, step);
  const workload::JobSpec& job = parts.job;
  const storage::StorageSpec& st = parts.storage;
  const storage::CheckpointSize& size = parts.size;
  const storage::CheckpointTiming& timing = parts.timing;
  const storage::DataLoading loading = storage::data_loading(
      job.global_batch_size, job.model.seq_length, storage::token_bytes_for_vocab(job.model.vocab),
      size.nodes, st, sim::Duration::from_seconds(step_time_s));
  const FlushContention& flush = parts.flush;
  report["storage"] = storage_section(c, size, timing, loading, flush, step_time_s);

  const reliability::FailureModel& failures = parts.failures;
  const reliability::JobFootprint& footprint = parts.footprint;
  const double mtbf = parts.plan.mtbf_s;
  const double save = parts.plan.save_s;
  const double optimal = parts.plan.optimal_s;
  const double interval = parts.plan.interval_s;
  nlohmann::json r = {{"mtbf_s", finite_or_null(mtbf)},
                      {"checkpoint_interval_s", finite_or_null(interval)},
                      {"optimal_checkpoint_interval_s", finite_or_null(optimal)},
                      {"young_daly_interval_s", finite_or_null(reliability::daly_interval_s(save, mtbf))},
                      {"young_interval_s", finite_or_null(reliability::young_interval_s(save, mtbf))},
                      {"failure_profile", c.failures.profile},
                      {"job_nodes", footprint.nodes},
                      {"job_switches", footprint.switches}};
  if (!(std::isfinite(interval) && interval > 0)) {
    report["reliability"] = r;
    return;
  }
  const reliability::CampaignSpec spec =
      campaign_spec(c, footprint, failures, timing, size.nodes, interval, save);
  const reliability::CampaignResult campaign = keyed([&] { return reliability::run_campaign(spec); });
  const double half_width = 1.96 * campaign.goodput_stddev / std::sqrt(static_cast<double>(spec.repeats));
  const double gpus = static_cast<double>(size.nodes) * c.cluster.gpus_per_node;
  r["goodput"] = campaign.goodput_mean;
  r["goodput_p10"] = campaign.goodput_p10;
  r["goodput_p90"] = campaign.goodput_p90;
  r["goodput_ci95"] = {campaign.goodput_mean - half_width, campaign.goodput_mean + half_width};
  r["interruptions"] = campaign.interruptions_mean;
  r["failures"] = campaign.failures_mean;
  r["interruptions_by_cause"] = by_class(campaign.interruptions_by_class);
  r["failures_by_cause"] = by_class(campaign.failures_by_class);
  r["defects_caught"] = campaign.defects_caught_mean;
  r["rto_s"] = campaign.rto_mean_s;
  r["lost_gpu_hours"] = (spec.duration_s - campaign.time_mean.useful_s) * gpus / 3600.0;
  const auto& t = campaign.time_mean;
  r["time_lost_s"] = {{"lost_work", t.lost_work_s}, {"checkpoint", t.checkpoint_s},
                      {"detection", t.detection_s}, {"repair_wait", t.repair_wait_s},
                      {"restart", t.restart_s},     {"health_check", t.health_check_s}};
  r["campaign"] = {{"duration_s", spec.duration_s}, {"repeats", spec.repeats}};
  if (step.power)
    add_campaign_power(t.useful_s + t.lost_work_s, spec.duration_s, *step.power, report["power"]);
  add_campaign_timeline(spec, step, report);
  if (c.campaign.train_tokens > 0 && step.tokens_per_s > 0 && campaign.goodput_mean > 0) {
    const double ideal = c.campaign.train_tokens / step.tokens_per_s;
    r["time_to_train_s"] = ideal / campaign.goodput_mean;
    r["time_to_train_ideal_s"] = ideal;
  }
  // Goodput versus checkpoint interval around the optimum: the renewal-reward closed form
  // (goodput.h) and the simulated campaign at the same intervals.
  if (std::isfinite(optimal) && optimal > 0) {
    // Detection averaged over the classes by rate: hangs wait for the collective timeout.
    const double hang_share =
        reliability::class_rate_per_s(failures, footprint, reliability::FailureClass::hang) * mtbf;
    const double detection_s =
        (1.0 - hang_share) * spec.recovery.detection_s + hang_share * spec.recovery.hang_detection_s;
    const double recovery_s = detection_s + c.recovery.restart.seconds() + timing.restore.seconds();
    std::vector<double> grid;
    for (int k = -6; k <= 6; ++k) {
      const double tau = optimal * std::pow(2.0, k / 2.0);
      if (timing.flush > Duration::zero() || tau >= save) grid.push_back(tau);
    }
    const reliability::IntervalCurve sim =
        keyed([&] { return reliability::simulate_interval_curve(spec, grid); });
    nlohmann::json curve = nlohmann::json::array();
    for (const reliability::IntervalPoint& p : sim.points) {
      curve.push_back({{"interval_s", p.interval_s},
                       {"goodput", reliability::expected_goodput(p.interval_s, save, recovery_s, mtbf)},
                       {"simulated_goodput", p.goodput_mean},
                       {"simulated_stderr", p.goodput_stderr}});
    }
    r["interval_curve"] = curve;
    r["simulated_optimal_interval_s"] = sim.best_interval_s;
    r["simulated_optimum_inside_grid"] = sim.best_inside;
  }
  report["reliability"] = r;
}

}  // namespace ct::scenario
