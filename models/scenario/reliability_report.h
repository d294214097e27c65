// Checkpoint, data-loading and reliability figures of a training job, from its step time:
// checkpoint size and save/restore times on the scenario's storage, the loader's stall, the
// job's MTBF, Young/Daly and the numerically optimal checkpoint interval, and the goodput
// of a Monte Carlo campaign (or the renewal-reward closed form when nothing can fail).
#pragma once

#include <nlohmann/json.hpp>

#include "models/scenario/config.h"

namespace ct::scenario {

// Adds report["storage"] and report["reliability"]; step_time_s from the replay.
void reliability_report(const Config& config, double step_time_s, nlohmann::json& report);

}  // namespace ct::scenario
