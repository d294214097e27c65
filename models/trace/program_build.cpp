// Shared program builders (see program_build.h).
#include "models/trace/program_build.h"

namespace ct::trace {

replay::Instr compute_instr(double seconds, replay::Category category) {
  replay::Instr in;
  in.kind = replay::InstrKind::compute;
  in.stream = replay::Stream::compute;
  in.category = category;
  in.seconds = seconds;
  return in;
}

replay::Category phase_category(kineto::Phase phase) {
  return phase == kineto::Phase::optimizer  ? replay::Category::optimizer
         : phase == kineto::Phase::backward ? replay::Category::backward
                                            : replay::Category::forward;
}

std::vector<int32_t> join_down(std::vector<replay::Instr>& instrs, std::vector<int32_t> deps, size_t keep) {
  while (deps.size() > keep && deps.size() >= 2) {
    replay::Instr join = compute_instr(0, replay::Category::step_end);
    join.after = deps[0];
    join.after2 = deps[1];
    deps.erase(deps.begin(), deps.begin() + 2);
    deps.insert(deps.begin(), static_cast<int32_t>(instrs.size()));
    instrs.push_back(join);
  }
  return deps;
}

}  // namespace ct::trace
