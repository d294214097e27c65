// Where a stalled run waits (issue 19's hang diagnosis): the report sections of a training
// step that node_kill / hang faults stopped, and of a trace replay that cannot finish.
//
// hang_diagnosis.ranks lists, per simulated rank, its state (finished, waiting, killed, hung),
// the operation it waits in (waiting_in: dp_reduce_scatter, pp_recv, ...; the collective or
// transfer it entered longest ago and never left, else the receive its next instruction
// needs), the process group (group "pg<N>") and how many of that group's collectives the rank
// had completed before it (seq), and missing_ranks: the members that never entered that
// collective (or the peer that never sent). Two causes are told apart: a rank that never
// reached the collective (it is in missing_ranks of the others: "behind") and ranks that entered
// different collectives of one group (another kind, size or sequence number: mismatched_ranks).
// "where" groups the waiting ranks by (waiting_in, group, seq); "ahead" are the ranks that
// wait for a missing one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/replay/executor.h"
#include "models/replay/step_model.h"

namespace ct::scenario {

nlohmann::json hang_diagnosis(const replay::Stall& stall);

// The failure of a job that node_kill / hang faults stopped: job_failed_at_s, failure (how it
// was detected, what stopped), hang_diagnosis; and the step figures in not_computed.
void failure_report(const replay::StepInput& in, const replay::JobFailure& failure, nlohmann::json& report,
                    nlohmann::json& not_computed);

}  // namespace ct::scenario
