// Monte Carlo of a training campaign with failures, recovery, hot spares and checkpoints.
//
// Clock: double seconds from the campaign start, its own coarse clock (not sim::Time: a
// campaign of months does not fit int64 picoseconds comfortably). Resolution at a month is
// ~1e-9 s, far below any modelled duration.
// Per replica r, one random stream sim::Rng(seed, kCampaignStream + r) drawn in event order,
// so a replica's result depends only on (seed, r).
// Job: `nodes` slots, each holding a node, filled from a pool of nodes + hot spares. Every
// held node fails after an independent time drawn when it joins (age 0 at the campaign
// start or when it replaces a failed node): exponential with rate lambda_node, or
// Weibull(k, eta) with the same mean (failure_model.h), its class drawn in proportion to
// the node-removing class rates at the failure. A joining node is defective with
// probability latent_defect_fraction; a health check (health_check_s > 0) catches a
// defective node with probability health_check_coverage before the job uses it (the node
// goes to repair and the next one is taken from the pool); an uncaught defect fails the
// node at min(its normal lifetime, an exponential time of mean latent_defect_mean_s).
// Nodes fail whatever the job is doing (training, saving, recovering, waiting); idle spares
// do not fail. The job-wide classes (link, switch, software, hang) form one Poisson process
// that interrupts the job without removing a node.
// Training: tau seconds of work, then a checkpoint that blocks training for d seconds
// (synchronous: durable at the end of d; asynchronous: durable `flush` seconds after the
// snapshot, while training continues; a save that finds the previous flush unfinished
// first waits for it, counted as checkpoint time).
// Failure: everything since the capture point of the last durable checkpoint is lost
// (training and blocking-save time; an unfinished flush is lost too). The failed node goes
// to repair and rejoins the spare pool `repair` seconds later. Detection takes
// `detection_s` (heartbeat timeout) for a crash and `hang_detection_s` (the collective
// timeout) for class hang. Then the empty slots are filled from the pool; if the pool is
// empty the job waits for the next repaired node ("repair_wait"). Then the health check of
// the new nodes (health_check_s, also once at the campaign start), then restart + restore
// seconds, then training resumes from the last durable checkpoint. A failure during any recovery phase starts
// recovery again (new detection). With unlimited spares and exponential failures this is the model of
// goodput.h, which the tests check.
// End of the campaign: work since the last checkpoint is not lost (the campaign merely
// stops) and counts as useful; an RTO still in progress is not counted (censored).
// Outputs per replica: goodput = useful / duration; interruptions (failures that stop
// training or a save), failures (all, including during recovery), RTO = time from an
// interrupting failure to training again; wall time per cause. Over replicas: the mean,
// p10 and p90 (linear interpolation between order statistics, numpy's default) and the
// standard deviation of goodput; means of the rest; RTO is averaged over all interruptions.
// Replicas run in parallel (oneTBB, `threads` workers, 0 = all cores); each writes only its
// own slot and the reduction runs in replica order, so the result does not depend on the
// thread count.
// Checkpoint interval curve: the campaign at each interval with the same seed (common
// random numbers: node failures do not depend on the interval, so the curve's shape is
// far less noisy than each point); the simulated optimum is the vertex of the parabola
// through the best point and its two neighbours in log(interval).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/reliability/failure_model.h"

namespace ct::reliability {

struct RecoveryModel {
  double detection_s = 60.0;           // recovery.detection
  double restart_s = 600.0;            // recovery.restart
  double restore_s = 0.0;              // reading the checkpoint back (storage::CheckpointTiming::restore)
  int hot_spares = 0;                  // spare nodes in the pool at the start (recovery.hot_spares x nodes)
  double repair_s = 86400.0;           // recovery.repair
  double hang_detection_s = 1800.0;    // training_job.runtime.collective_timeout
  double health_check_s = 0.0;         // recovery.health_check (0 = none)
  double health_check_coverage = 0.0;  // recovery.health_check_coverage
};

struct CheckpointPolicy {
  double interval_s = 0.0;  // tau, training seconds between checkpoints
  double blocking_s = 0.0;  // d, training stall per checkpoint
  double flush_s = 0.0;     // background flush after the snapshot; 0 = synchronous
};

struct CampaignSpec {
  double duration_s = 72.0 * 3600.0;  // campaign.duration
  int repeats = 10;                   // campaign.repeats
  uint64_t seed = 1;                  // seed
  int threads = 0;                    // campaign.threads (0 = all cores)
  bool record_phases = false;         // fill ReplicaResult::phases (at most kMaxPhaseChanges)
  JobFootprint job;
  FailureModel failures;
  RecoveryModel recovery;
  CheckpointPolicy checkpoint;
};

// Wall seconds per cause (useful + all causes = duration).
struct TimeByCause {
  double useful_s = 0.0;
  double lost_work_s = 0.0;   // training and blocking saves redone after a failure
  double checkpoint_s = 0.0;  // blocking saves of durable checkpoints (+ waits for a flush)
  double detection_s = 0.0;
  double repair_wait_s = 0.0;  // no spare: waiting for a repaired node
  double restart_s = 0.0;      // restart + restore
  double health_check_s = 0.0;
};

// What the job is doing: training, a blocking checkpoint save, detecting a failure, waiting
// for a repaired node, health-checking new nodes, restarting (relaunch + restore).
enum class CampaignPhase : uint8_t { train, save, detect, wait, check, restart };
const char* campaign_phase_name(CampaignPhase p);

struct PhaseChange {
  double t_s = 0.0;
  CampaignPhase phase = CampaignPhase::train;
};

using ClassCounts = std::array<int, kFailureClasses>;  // indexed by FailureClass
using ClassMeans = std::array<double, kFailureClasses>;

struct ReplicaResult {
  double goodput = 0.0;
  int interruptions = 0;
  int failures = 0;
  int repair_waits = 0;    // recoveries that had to wait for a repaired node
  int checkpoints = 0;     // durable checkpoints
  int defects_caught = 0;  // defective nodes stopped by the health check
  ClassCounts failures_by_class{};
  ClassCounts interruptions_by_class{};
  int rto_count = 0;
  double rto_sum_s = 0.0;
  TimeByCause time;
  std::vector<PhaseChange> phases;  // with CampaignSpec::record_phases: every phase entered, in order
};

struct CampaignResult {
  double goodput_mean = 0.0;
  double goodput_p10 = 0.0;
  double goodput_p90 = 0.0;
  double goodput_stddev = 0.0;  // sample standard deviation over replicas (0 for one)
  double interruptions_mean = 0.0;
  double failures_mean = 0.0;
  double repair_waits_mean = 0.0;
  double defects_caught_mean = 0.0;
  ClassMeans failures_by_class{};
  ClassMeans interruptions_by_class{};
  double rto_mean_s = 0.0;  // over all interruptions of all replicas; 0 when there were none
  TimeByCause time_mean;    // per replica
  std::vector<ReplicaResult> replicas;
};

constexpr size_t kMaxPhaseChanges = 1 << 20;
constexpr uint64_t kCampaignStream = 0x52454c4900000000ULL;  // "RELI" << 32

// Throws std::invalid_argument naming the scenario key: campaign.duration,
// campaign.repeats, training_job.checkpoint.interval (also when it is shorter than a
// synchronous save), training_job.checkpoint (negative save or flush), recovery.detection,
// training_job.runtime.collective_timeout, recovery.health_check(_coverage),
// recovery.restart, recovery.hot_spares, recovery.repair, campaign.threads, and the
// failures.* keys (failure_model.h validate).
// The campaign clock's range: 100 years in seconds (campaign.duration at most this).
inline constexpr double kMaxCampaignSeconds = 100.0 * 365.25 * 86400.0;

void validate(const CampaignSpec& spec);

ReplicaResult run_replica(const CampaignSpec& spec, int replica);
CampaignResult run_campaign(const CampaignSpec& spec);

struct IntervalPoint {
  double interval_s = 0.0;
  double goodput_mean = 0.0;
  double goodput_stderr = 0.0;  // standard error of the mean over replicas
};

struct IntervalCurve {
  std::vector<IntervalPoint> points;  // in the order of `intervals`
  double best_interval_s = 0.0;       // parabola vertex (the best point at an edge of the grid)
  bool best_inside = false;           // false: the best point is at an edge of the grid
};

// The campaign of `spec` at each interval (training seconds between checkpoints), sorted
// ascending and positive; throws std::invalid_argument naming
// training_job.checkpoint.interval otherwise.
IntervalCurve simulate_interval_curve(const CampaignSpec& spec, const std::vector<double>& intervals);

}  // namespace ct::reliability
