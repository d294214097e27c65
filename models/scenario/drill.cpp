#include "models/scenario/drill.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/replay/step_model.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/reliability_report.h"
#include "models/scenario/runner.h"
#include "models/workload/layout.h"

namespace ct::scenario {

using nlohmann::json;

namespace {

constexpr double kMaxSteps = 1e8;  // steps before the kill the timeline walks at most

// Where the job stands at the kill, from walking its events (step ends, checkpoint saves,
// flushes becoming durable) in time order from zero.
struct KillPoint {
  int64_t steps_done = 0;    // completed steps
  bool in_save = false;      // killed during a checkpoint's blocking save, else in a step
  double step_start_s = 0;   // start of the step in progress
  double offset_s = 0;       // into that step
  int64_t durable_step = 0;  // newest durable checkpoint (0: the job's initial state)
  double durable_at_s = 0;   // when it became durable
  int64_t lost_step = -1;    // a checkpoint whose flush was still running at the kill
  double lost_durable_at_s = 0;
};

struct Cycle {
  double step_s = 0;           // healthy step
  double flush_step_s = 0;     // a step while a flush runs
  int64_t interval_steps = 0;  // N
  double blocking_s = 0, flush_s = 0;
};

KillPoint walk_to_kill(const Cycle& cy, double at) {
  KillPoint k;
  double t = 0;
  bool inflight = false;
  int64_t inflight_step = 0;
  double inflight_done = 0;
  const auto settle = [&](double now) {  // a flush that finished by `now` is durable
    if (inflight && inflight_done <= now) {
      k.durable_step = inflight_step;
      k.durable_at_s = inflight_done;
      inflight = false;
    }
  };
  for (;;) {
    settle(t);
    const double len = inflight ? cy.flush_step_s : cy.step_s;
    if (at < t + len) {  // killed in this step
      k.step_start_s = t;
      k.offset_s = at - t;
      break;
    }
    t += len;
    ++k.steps_done;
    if (k.steps_done % cy.interval_steps != 0) continue;
    settle(t);
    // A save waits for the previous flush (one checkpoint in flight), then stalls training.
    const double save_start = inflight ? std::max(t, inflight_done) : t;
    settle(save_start);
    if (at < save_start + cy.blocking_s) {
      k.in_save = true;
      k.step_start_s = t;
      break;
    }
    t = save_start + cy.blocking_s;
    if (cy.flush_s > 0) {
      inflight = true;
      inflight_step = k.steps_done;
      inflight_done = t + cy.flush_s;
    } else {
      k.durable_step = k.steps_done;
      k.durable_at_s = t;
    }
  }
  settle(at);
  if (inflight) {
    k.lost_step = inflight_step;
    k.lost_durable_at_s = inflight_done;
  }
  return k;
}

// Detection of the stop, simulated: the scenario's step with the node stopped at the same
// offset into the last simulated step: the delay from the stop to the failure, and how it
// was noticed.
struct Detection {
  double delay_s = 0;
  bool by_heartbeat = false;
  uint64_t events = 0;
};

Detection simulate_detection(const Config& c, const DrillOptions& o, const replay::StepResult& healthy,
                             double offset_s) {
  replay::StepInput in = step_input(c);
  in.program.fold = false;
  in.program.fold_rails = false;  // the stopped node's GPUs each run
  in.trace = nullptr;
  const double simulated = healthy.step_time_s - healthy.breakdown.straggler_s;
  const double at = healthy.last_step_start_s + std::min(offset_s, 0.999 * simulated);
  in.node_stops.push_back({"--kill", o.node, at, !o.hang});
  replay::StepResult r;
  try {
    r = replay::simulate_step(in);
  } catch (const std::invalid_argument& e) {
    throw ScenarioError({std::string("--kill/--at: ") + e.what()});
  }
  if (!r.failure) throw std::logic_error("drill: the stopped node did not stop the job");
  Detection d;
  d.delay_s = r.failure->failed_at_s - at;
  if (r.failure->detected_by == replay::JobFailure::DetectedBy::communicator_error)
    throw std::logic_error("drill: a communicator error without link faults");
  d.by_heartbeat = r.failure->detected_by == replay::JobFailure::DetectedBy::heartbeat;
  d.events = r.events;
  return d;
}

struct Phase {
  std::string name;
  double start_s, end_s;
};

json phases_json(const std::vector<Phase>& phases) {
  json out = json::array();
  for (const Phase& p : phases) {
    out.push_back({{"phase", p.name},
                   {"start_s", p.start_s},
                   {"end_s", p.end_s},
                   {"duration_s", std::isfinite(p.end_s) ? json(p.end_s - p.start_s) : json(nullptr)}});
  }
  return out;
}

// Checkpoint boundaries among the lost steps (durable_step, steps_done]: the replay saves
// them again.
int64_t saves_between(int64_t from_step, int64_t to_step, int64_t interval) {
  return to_step / interval - from_step / interval;
}

// The closed form, as the reliability model counts one failure: detection by class, the
// repair wait, health check, restart and restore, and the work since the last durable
// checkpoint from the checkpoint cycle (N steps + save; a flush shorter than a cycle).
struct ClosedForm {
  double detect = 0, wait = 0, lost = 0, replay = 0, rto = 0;
};

ClosedForm closed_form(const Config& c, const DrillOptions& o, const Cycle& cy, double restore_s,
                       int spares) {
  ClosedForm f;
  const double step = cy.step_s;
  const double cycle = static_cast<double>(cy.interval_steps) * step + cy.blocking_s;
  const double n_cycles = std::floor(o.at_s / cycle);
  const double into = o.at_s - n_cycles * cycle;
  const double cycle_work = static_cast<double>(cy.interval_steps) * step;
  f.lost = std::min(into, cycle_work);
  double resaves = into >= cycle_work ? 1 : 0;
  if (cy.flush_s > 0 && n_cycles >= 1 && into < cy.flush_s) {  // the last flush was still running
    f.lost += cycle_work;
    resaves += 1;
  }
  f.detect = o.hang ? c.training_job.runtime.collective_timeout.seconds() : c.recovery.detection.seconds();
  f.wait = spares >= 1 ? 0.0 : std::max(0.0, c.recovery.repair.seconds() - f.detect);
  f.replay = f.lost + resaves * cy.blocking_s;
  f.rto = f.detect + f.wait + c.recovery.health_check.seconds() + c.recovery.restart.seconds() + restore_s +
          f.replay;
  return f;
}

}  // namespace

json drill(const Config& c, const DrillOptions& o) {
  if (!c.has("training_job")) throw ScenarioError({"drill: the scenario needs a training_job"});
  if (o.node < 0 || o.node >= c.cluster.nodes)
    throw ScenarioError({"--kill: got " + std::to_string(o.node) +
                         ", expected a node index below cluster.nodes = " + std::to_string(c.cluster.nodes)});
  if (!(o.at_s >= 0) || !std::isfinite(o.at_s))
    throw ScenarioError({"--at: got " + std::to_string(o.at_s) + " s, expected a time >= 0"});
  if (!c.faults.empty())
    throw ScenarioError({"faults: the drill injects its own kill; remove faults[] from the scenario"});

  const replay::StepResult healthy = simulate_training_step(c);
  StepFigures figures;
  figures.step_time_s = healthy.step_time_s;
  figures.exposed_dp_comm_s = healthy.breakdown.exposed_dp_comm_s;
  figures.exposed_pp_comm_s = healthy.breakdown.exposed_pp_comm_s;
  figures.tokens_per_s = healthy.tokens_per_s;
  const CheckpointPlan plan = checkpoint_plan(c, figures);
  const double step = healthy.step_time_s;
  if (!std::isfinite(plan.interval_s)) {
    throw ScenarioError(
        {"training_job.checkpoint.interval_steps: 0 and nothing fails (infinite MTBF): give "
         "training_job.checkpoint.interval or interval_steps for the drill"});
  }
  Cycle cy;
  cy.step_s = step;
  cy.flush_step_s = step + plan.flush_step_slowdown_s;
  cy.interval_steps = c.training_job.checkpoint.interval_steps > 0
                          ? c.training_job.checkpoint.interval_steps
                          : std::max<int64_t>(1, std::llround(plan.interval_s / step));
  cy.blocking_s = plan.blocking_s;
  cy.flush_s = plan.flush_s;
  if (o.at_s / step > kMaxSteps)
    throw ScenarioError({"--at: got " + std::to_string(o.at_s) + " s, about " +
                         std::to_string(o.at_s / step) + " steps; the drill walks at most 1e8 steps"});
  const KillPoint k = walk_to_kill(cy, o.at_s);

  // Detection: the step simulated with the node stopped; in a save no collective runs, so a
  // crash is noticed by the heartbeat and a hang by the next collective's watchdog.
  Detection det;
  const double heartbeat = c.recovery.detection.seconds();
  const double timeout = c.training_job.runtime.collective_timeout.seconds();
  if (k.in_save) {
    det.by_heartbeat = !o.hang && heartbeat <= timeout;
    det.delay_s = det.by_heartbeat ? heartbeat : timeout;
  } else {
    det = simulate_detection(c, o, healthy, k.offset_s);
  }

  // Recovery: a hot spare replaces the node at once; without one the job waits for repair.
  const int spares = c.cluster.nodes - plan.job_nodes;
  const double detected = o.at_s + det.delay_s;
  const double node_ready = spares >= 1 ? detected : std::max(detected, o.at_s + c.recovery.repair.seconds());
  const double checked = node_ready + c.recovery.health_check.seconds();
  const double restarted = checked + c.recovery.restart.seconds();
  const double restored = restarted + plan.restore_s;
  const int64_t lost_steps = k.steps_done - k.durable_step;
  const double partial = k.in_save ? 0.0 : k.offset_s;
  const int64_t resaves = saves_between(k.durable_step, k.steps_done, cy.interval_steps);
  const double replay =
      static_cast<double>(lost_steps) * step + partial + static_cast<double>(resaves) * cy.blocking_s;
  const double back = restored + replay;

  std::vector<Phase> phases = {{"train", 0.0, o.at_s}, {"detect", o.at_s, detected}};
  if (node_ready > detected) phases.push_back({"wait_for_repair", detected, node_ready});
  if (checked > node_ready) phases.push_back({"health_check", node_ready, checked});
  phases.push_back({"restart", checked, restarted});
  phases.push_back({"restore", restarted, restored});
  phases.push_back({"replay", restored, back});
  phases.push_back({"steady", back, std::numeric_limits<double>::infinity()});

  const ClosedForm cf = closed_form(c, o, cy, plan.restore_s, spares);
  const double rto = back - o.at_s;
  const double gpus = static_cast<double>(workload::gpus_used(job_spec(c).parallelism));
  const char* during = k.in_save ? "checkpoint_save" : k.lost_step >= 0 ? "checkpoint_flush" : "step";
  return {{"scenario", c.name},
          {"kill", {{"node", o.node}, {"at_s", o.at_s}, {"kind", o.hang ? "hang" : "node_kill"}}},
          {"job_gpus", gpus},
          {"step_time_s", step},
          {"killed_during", during},
          {"checkpoint",
           {{"interval_steps", cy.interval_steps},
            {"save_s", cy.blocking_s},
            {"flush_s", cy.flush_s},
            {"restore_s", plan.restore_s},
            {"restored_step", k.durable_step},
            {"restored_durable_at_s", k.durable_at_s},
            {"not_durable_step", k.lost_step >= 0 ? json(k.lost_step) : json(nullptr)},
            {"not_durable_until_s", k.lost_step >= 0 ? json(k.lost_durable_at_s) : json(nullptr)}}},
          {"steps_done_at_kill", k.steps_done},
          {"detected_by", det.by_heartbeat ? "heartbeat" : "collective_timeout"},
          {"detection_s", det.delay_s},
          {"hot_spares", std::max(0, spares)},
          {"phases", phases_json(phases)},
          {"lost_steps", lost_steps},
          {"lost_work_s", static_cast<double>(lost_steps) * step + partial},
          {"recovery_s", restored - o.at_s},
          {"rto_s", rto},
          {"gpu_hours_lost", rto * gpus / 3600.0},
          {"closed_form_rto_s", cf.rto},
          {"closed_form",
           {{"detection_s", cf.detect},
            {"repair_wait_s", cf.wait},
            {"health_check_s", c.recovery.health_check.seconds()},
            {"restart_s", c.recovery.restart.seconds()},
            {"restore_s", plan.restore_s},
            {"lost_work_s", cf.lost},
            {"replay_s", cf.replay}}},
          {"rto_vs_closed_form", cf.rto > 0 ? json(rto / cf.rto - 1.0) : json(nullptr)},
          {"sim", {{"detection_events", det.events}}}};
}

}  // namespace ct::scenario
