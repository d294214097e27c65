// Small builders shared by the trace importers (conventions in trace_import.h).
#pragma once

#include <cstdint>
#include <vector>

#include "models/replay/step_program.h"
#include "models/trace/kineto_events.h"

namespace ct::trace {

// A compute-stream instruction of `seconds` (idle and join instructions are Category::step_end).
replay::Instr compute_instr(double seconds, replay::Category category);

// The instruction category of a Kineto GPU event's training phase.
replay::Category phase_category(kineto::Phase phase);

// Appends zero-second joins to `instrs` until at most `keep` (>= 1) of `deps` remain: each
// join waits for the first two, and replaces them at the front (a chain, in order). Returns
// what remains; empty stays empty.
std::vector<int32_t> join_down(std::vector<replay::Instr>& instrs, std::vector<int32_t> deps, size_t keep);

}  // namespace ct::trace
