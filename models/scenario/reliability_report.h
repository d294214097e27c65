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

// Adds report["storage"] and report["reliability"] (and the campaign's power to
// report["power"] when the step has power figures).
void reliability_report(const Config& config, const StepFigures& step, nlohmann::json& report);

}  // namespace ct::scenario
