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

#include "models/reliability/failure_model.h"
#include "models/scenario/config.h"

namespace ct::scenario {

// The failure rates of the scenario: failures.profile (custom: the *_rate_per_day keys;
// llama3: reliability::llama3_profile(), and then a non-zero rate key is an error) times
// failures.rate_scale. Throws ScenarioError naming the key.
reliability::FailureModel failure_model(const Config& config);

// Adds report["storage"] and report["reliability"]; step_time_s from the replay.
void reliability_report(const Config& config, double step_time_s, nlohmann::json& report);

}  // namespace ct::scenario
