#include "models/scenario/hang_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace ct::scenario {

using nlohmann::json;

namespace {

constexpr size_t kListed = 64;  // ranks listed per group of the summary

std::string group_name(int32_t group) { return group < 0 ? "" : "pg" + std::to_string(group); }

json capped(const std::vector<int>& ranks) {
  json out = json::array();
  for (size_t i = 0; i < ranks.size() && i < kListed; ++i) out.push_back(ranks[i]);
  return out;
}

json rank_row(const replay::RankWait& w) {
  json row = {{"rank", w.gpu}, {"state", replay::state_name(w.state)}};
  if (w.waiting_in.empty()) {
    row["waiting_in"] = nullptr;
    return row;
  }
  row["waiting_in"] = w.waiting_in;
  row["group"] = w.group >= 0 ? json(group_name(w.group)) : json(nullptr);
  row["seq"] = w.group >= 0 ? json(w.seq) : json(nullptr);
  row["step"] = w.step;
  row["bytes"] = w.bytes;
  row["since_s"] = w.since_s;
  row["missing_ranks"] = w.missing;
  row["mismatched_ranks"] = w.mismatched;
  return row;
}

// "8 ranks (4, 5, 6, ...)"
std::string rank_list(const std::vector<int>& ranks) {
  std::string out = std::to_string(ranks.size()) + (ranks.size() == 1 ? " rank (" : " ranks (");
  for (size_t i = 0; i < ranks.size() && i < 6; ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + (ranks.size() > 6 ? ", ...)" : ")");
}

}  // namespace

json hang_diagnosis(const replay::Stall& stall) {
  json rows = json::array();
  // Where ranks wait: (operation, step, sequence number), over all groups.
  struct Place {
    std::vector<int> ranks;
    std::set<int> missing;
    std::set<int32_t> groups;
  };
  std::map<std::tuple<std::string, int, int64_t>, Place> where;
  std::vector<int> stopped, ahead, mismatched;
  std::set<int> behind;
  for (const replay::RankWait& w : stall.ranks) {
    rows.push_back(rank_row(w));
    if (w.state == replay::RankWait::State::killed || w.state == replay::RankWait::State::hung)
      stopped.push_back(w.gpu);
    if (w.state != replay::RankWait::State::waiting) continue;
    Place& place = where[{w.waiting_in, w.step, w.seq}];
    place.ranks.push_back(w.gpu);
    place.missing.insert(w.missing.begin(), w.missing.end());
    if (w.group >= 0) place.groups.insert(w.group);
    if (!w.missing.empty()) ahead.push_back(w.gpu);
    if (!w.mismatched.empty()) mismatched.push_back(w.gpu);
    behind.insert(w.missing.begin(), w.missing.end());
  }
  std::vector<std::pair<std::tuple<std::string, int, int64_t>, Place>> sorted(where.begin(), where.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.ranks.size() > b.second.ranks.size();
  });
  json places = json::array();
  for (const auto& [key, place] : sorted) {
    const auto& [op, step, seq] = key;
    const std::vector<int> missing(place.missing.begin(), place.missing.end());
    json groups = json::array();
    for (const int32_t g : place.groups) {
      if (groups.size() < kListed) groups.push_back(group_name(g));
    }
    places.push_back({{"waiting_in", op.empty() ? json(nullptr) : json(op)},
                      {"step", step},
                      {"seq", seq >= 0 ? json(seq) : json(nullptr)},
                      {"count", place.ranks.size()},
                      {"ranks", capped(place.ranks)},
                      {"groups", groups},
                      {"group_count", place.groups.size()},
                      {"missing_ranks", capped(missing)},
                      {"missing_count", missing.size()}});
  }
  json groups = json::object();
  for (const auto& [g, gpus] : stall.groups)
    groups[group_name(g)] = {{"size", gpus.size()}, {"ranks", capped(gpus)}};
  const std::vector<int> behind_list(behind.begin(), behind.end());
  // The ranks at the end of the wait chains: others wait for them, and they wait for no one
  // (stopped, finished, or waiting on nothing missing).
  std::map<int, const replay::RankWait*> by_gpu;
  for (const replay::RankWait& w : stall.ranks) by_gpu[w.gpu] = &w;
  std::vector<int> root;
  for (const int g : behind_list) {
    const auto it = by_gpu.find(g);
    if (it == by_gpu.end() || it->second->state != replay::RankWait::State::waiting ||
        it->second->missing.empty())
      root.push_back(g);
  }
  std::string summary;
  if (!stopped.empty()) summary += rank_list(stopped) + " stopped; ";
  size_t waiting = 0;
  for (const auto& [key, place] : sorted) waiting += place.ranks.size();
  summary += std::to_string(waiting) + " waiting";
  if (!sorted.empty()) {
    const auto& [op, step, seq] = sorted.front().first;
    const Place& place = sorted.front().second;
    summary += ", most (" + std::to_string(place.ranks.size()) + ") in " +
               (op.empty() ? std::string("nothing they entered") : op) + " of step " + std::to_string(step);
    if (seq >= 0)
      summary += " (seq " + std::to_string(seq) + ", " + std::to_string(place.groups.size()) + " group(s))";
  }
  if (!mismatched.empty()) {
    summary += "; " + rank_list(mismatched) +
               " entered a different collective of their group than its other "
               "members (mismatched collectives)";
  }
  if (!behind_list.empty()) summary += "; they wait for " + rank_list(behind_list) + " that never arrived";
  if (!root.empty()) summary += "; at the end of every wait: " + rank_list(root);
  return {{"summary", summary},
          {"cause", !mismatched.empty()    ? "mismatched_collectives"
                    : !behind_list.empty() ? "ranks_never_arrived"
                                           : "no_rank_waits"},
          {"stopped_ranks", capped(stopped)},
          {"behind", capped(behind_list)},
          {"behind_count", behind_list.size()},
          {"root_cause_ranks", capped(root)},
          {"ahead", capped(ahead)},
          {"ahead_count", ahead.size()},
          {"mismatched", capped(mismatched)},
          {"where", places},
          {"process_groups", groups},
          {"ranks", rows}};
}

void failure_report(const replay::StepInput& in, const replay::JobFailure& failure, json& report,
                    json& not_computed) {
  json stops = json::array();
  for (const replay::NodeStop& s : in.node_stops) {
    stops.push_back(
        {{"fault", s.key}, {"kind", s.crash ? "node_kill" : "hang"}, {"node", s.node}, {"at_s", s.at_s}});
  }
  report["job_failed_at_s"] = failure.failed_at_s;
  using By = replay::JobFailure::DetectedBy;
  const By by = failure.detected_by;
  json f = {{"detected_by", by == By::heartbeat            ? "heartbeat"
                            : by == By::collective_timeout ? "collective_timeout"
                                                           : "communicator_error"},
            {"detection_s", in.detection_s},
            {"collective_timeout_s", in.collective_timeout_s},
            {"first_wait_s", failure.first_wait_s},
            {"last_progress_s", failure.stall.last_progress_s},
            {"stopped", stops},
            {"explanation",
             by == By::heartbeat
                 ? "a crashed node misses its heartbeats: recovery.detection after the crash, before any "
                   "collective timed out"
             : by == By::collective_timeout
                 ? "the first rank left waiting in a collective or receive (first_wait_s) reaches "
                   "training_job.runtime.collective_timeout; a hung process keeps its heartbeat"
                 : "a transfer found no surviving path when its retransmissions gave up "
                   "(network.rdma_retransmit_timeout after the link failed): its RDMA queue pair errors out "
                   "and NCCL aborts the communicator"}};
  if (failure.comm_error) {
    f["communicator_error"] = {{"src_gpu", failure.comm_error->src_gpu},
                               {"dst_gpu", failure.comm_error->dst_gpu},
                               {"message", failure.comm_error->message}};
  }
  report["failure"] = std::move(f);
  report["hang_diagnosis"] = hang_diagnosis(failure.stall);
  char at[64];
  std::snprintf(at, sizeof at, "%.6g", failure.failed_at_s);
  const std::string why =
      std::string("the job failed at ") + at +
      " s (faults stopped it, see failure and hang_diagnosis): no step completed to measure";
  for (const char* key : {"step_time_s", "mfu", "hfu", "tflops_per_gpu", "tokens_per_s",
                          "tokens_per_s_per_gpu", "breakdown", "power", "reliability"}) {
    not_computed[key] = why;
  }
}

}  // namespace ct::scenario
