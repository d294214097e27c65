#include "models/scenario/reliability_report.h"

#include <cmath>

#include "models/reliability/campaign.h"
#include "models/reliability/checkpoint_interval.h"
#include "models/reliability/failure_model.h"
#include "models/reliability/goodput.h"
#include "models/scenario/model_configs.h"
#include "models/storage/checkpoint.h"
#include "models/storage/checkpoint_timing.h"
#include "models/storage/data_loading.h"

namespace ct::scenario {
namespace {

// JSON has no infinity: an interval or MTBF that is infinite (nothing fails) is null.
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

void reliability_report(const Config& c, double step_time_s, nlohmann::json& report) {
  const workload::JobSpec job = job_spec(c);
  const storage::StorageSpec st{c.cluster.storage.read, c.cluster.storage.write, c.cluster.storage.metadata_latency,
                                {}, {}, 0};
  const storage::HostSpec host{c.cluster.gpus_per_node, c.cluster.pcie};
  const storage::CheckpointSize size = storage::checkpoint_size(job, c.cluster.gpus_per_node);
  const storage::CheckpointTiming timing = storage::checkpoint_timing(size, st, host, c.training_job.checkpoint.async_save);
  storage::check_retention(size, c.training_job.checkpoint.keep_last_n, st);
  const storage::DataLoading loading =
      storage::data_loading(job.global_batch_size, job.model.seq_length, storage::token_bytes_for_vocab(job.model.vocab),
                            size.nodes, st, sim::Duration::from_seconds(step_time_s));
  report["storage"] = {{"checkpoint_bytes", size.total_bytes},
                       {"checkpoint_bytes_per_gpu", size.per_gpu_bytes},
                       {"checkpoint_save_s", timing.blocking.seconds()},
                       {"checkpoint_flush_s", timing.flush.seconds()},
                       {"checkpoint_restore_s", timing.restore.seconds()},
                       {"data_bytes_per_step", loading.bytes_per_step},
                       {"loader_stall_s", loading.stall_per_step.seconds()},
                       {"loader_keeps_up", loading.keeps_up}};

  const reliability::FailureModel failures{c.failures.node_failure_rate_per_day, c.failures.gpu_failure_rate_per_day,
                                           c.failures.link_failure_rate_per_day,
                                           reliability::parse_failure_distribution(c.failures.distribution),
                                           c.failures.weibull_shape};
  const reliability::JobFootprint footprint{size.nodes, c.cluster.gpus_per_node, size.nodes * c.cluster.nics_per_node};
  reliability::validate(failures, footprint);
  const double mtbf = reliability::job_mtbf_s(failures, footprint);
  const double save = timing.blocking.seconds();
  const double optimal = reliability::optimal_interval_s(save, mtbf);
  const auto& ck = c.training_job.checkpoint;
  const double interval = ck.interval > Duration::zero() ? ck.interval.seconds()
                          : ck.interval_steps > 0        ? ck.interval_steps * step_time_s
                                                         : optimal;
  nlohmann::json r = {{"mtbf_s", finite_or_null(mtbf)},
                      {"checkpoint_interval_s", finite_or_null(interval)},
                      {"optimal_checkpoint_interval_s", finite_or_null(optimal)},
                      {"young_daly_interval_s", finite_or_null(reliability::daly_interval_s(save, mtbf))},
                      {"young_interval_s", finite_or_null(reliability::young_interval_s(save, mtbf))}};
  // Goodput versus checkpoint interval (renewal-reward closed form), around the optimum.
  const double recovery_s = c.recovery.detection.seconds() + c.recovery.restart.seconds() + timing.restore.seconds();
  if (std::isfinite(optimal) && optimal > 0) {
    nlohmann::json curve = nlohmann::json::array();
    for (int k = -6; k <= 6; ++k) {
      const double tau = optimal * std::pow(2.0, k / 2.0);
      curve.push_back({{"interval_s", tau}, {"goodput", reliability::expected_goodput(tau, save, recovery_s, mtbf)}});
    }
    r["interval_curve"] = curve;
  }
  if (std::isfinite(interval) && interval > 0) {
    reliability::CampaignSpec spec;
    spec.duration_s = c.campaign.duration.seconds();
    spec.repeats = c.campaign.repeats;
    spec.seed = static_cast<uint64_t>(c.seed);
    spec.job = footprint;
    spec.failures = failures;
    // The spare pool is every node the job does not use.
    spec.recovery = {c.recovery.detection.seconds(), c.recovery.restart.seconds(), timing.restore.seconds(),
                     c.cluster.nodes - size.nodes, c.recovery.repair.seconds()};
    spec.checkpoint = {interval, save, timing.flush.seconds()};
    const reliability::CampaignResult campaign = reliability::run_campaign(spec);
    r["goodput"] = campaign.goodput_mean;
    r["goodput_p10"] = campaign.goodput_p10;
    r["goodput_p90"] = campaign.goodput_p90;
    r["interruptions"] = campaign.interruptions_mean;
    r["rto_s"] = campaign.rto_mean_s;
    const auto& t = campaign.time_mean;
    r["time_lost_s"] = {{"lost_work", t.lost_work_s},     {"checkpoint", t.checkpoint_s}, {"detection", t.detection_s},
                        {"repair_wait", t.repair_wait_s}, {"restart", t.restart_s}};
    r["campaign"] = {{"duration_s", spec.duration_s}, {"repeats", spec.repeats}};
  }
  report["reliability"] = r;
}

}  // namespace ct::scenario
