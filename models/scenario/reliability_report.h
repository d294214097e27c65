// Checkpoint, data-loading and reliability figures of a training job, from its step time:
// checkpoint size and save/restore times on the scenario's storage, the loader's stall, the
// job's MTBF, Young/Daly and the numerically optimal checkpoint interval, and the goodput
// of a Monte Carlo campaign (or the renewal-reward closed form when nothing can fail):
// interruptions and failures by class, lost GPU-hours, a 95% confidence interval of the
// mean goodput (mean +- 1.96 s / sqrt(n)), time to train campaign.train_tokens, and the
// goodput-versus-interval curve both in closed form and simulated (campaign.h), with the
// simulated optimum next to Young's and Daly's intervals.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "models/reliability/failure_model.h"
#include "models/scenario/config.h"
#include "models/scenario/power_report.h"

namespace ct::scenario {

// The failure rates of the scenario: failures.profile (custom: the *_rate_per_day keys;
// llama3: reliability::llama3_profile(), and then a non-zero rate key is an error) times
// failures.rate_scale. Throws ScenarioError naming the key.
reliability::FailureModel failure_model(const Config& config);

// What the reliability figures take from the simulated step (typed: nothing is read back out
// of the report).
struct StepFigures {
  double step_time_s = 0.0;
  double exposed_dp_comm_s = 0.0;  // exposed data- and pipeline-parallel communication: the
  double exposed_pp_comm_s = 0.0;  // traffic a checkpoint flush on the compute fabric slows
  double tokens_per_s = 0.0;
  std::optional<StepPower> power;  // absent: no power section (then no campaign power)
};

// The checkpoint policy of the job and what it costs: the storage model's save (blocking),
// flush and restore times, the flush's slowdown of a step on the compute fabric, the job's
// MTBF, and the interval in force (training_job.checkpoint.interval, else interval_steps x
// step, else the Young/Daly-type optimum). Throws ScenarioError naming a key.
struct CheckpointPlan {
  double interval_s = 0.0;  // may be infinite (nothing fails and no interval given)
  double optimal_s = 0.0;
  double save_s = 0.0;                 // Young/Daly cost: the blocking part plus the flush's slowdown
  double blocking_s = 0.0;             // training stall per checkpoint
  double flush_s = 0.0;                // asynchronous write after the stall (0: synchronous)
  double restore_s = 0.0;              // reading the checkpoint back after a restart
  double flush_step_slowdown_s = 0.0;  // a step while a flush shares the compute fabric
  double mtbf_s = 0.0;
  int job_nodes = 0;
};
CheckpointPlan checkpoint_plan(const Config& config, const StepFigures& step);

// Adds report["storage"] and report["reliability"] (and the campaign's power to
// report["power"] when the step has power figures).
void reliability_report(const Config& config, const StepFigures& step, nlohmann::json& report);

}  // namespace ct::scenario
