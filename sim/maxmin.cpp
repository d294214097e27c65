#include "sim/maxmin.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>

namespace ct::sim {

int32_t MaxMinSolver::add_resource(double capacity) {
  if (!(capacity >= 0.0)) throw std::invalid_argument("max-min resource capacity must be >= 0");
  resources_.push_back(Resource{});
  resources_.back().capacity = capacity;
  return static_cast<int32_t>(resources_.size() - 1);
}

void MaxMinSolver::set_capacity(int32_t resource, double capacity) {
  if (!(capacity >= 0.0)) throw std::invalid_argument("max-min resource capacity must be >= 0");
  resources_[resource].capacity = capacity;
  for (const Incidence& inc : resources_[resource].users) update_static_bound(inc.variable);
  dirty_resources_.push_back(resource);
}

void MaxMinSolver::update_static_bound(int32_t id) {
  Variable& v = variables_[id];
  double b = v.bound;
  for (const Use& u : v.uses) b = std::min(b, resources_[u.resource].capacity / u.coefficient);
  v.static_bound = b;
}

double MaxMinSolver::load(int32_t resource) const {
  double sum = 0.0;
  for (const Incidence& inc : resources_[resource].users) {
    const Variable& v = variables_[inc.variable];
    sum += inc.coefficient * v.rate;
  }
  return sum;
}

int32_t MaxMinSolver::add_variable(double bound, std::span<const Use> uses) {
  if (!(bound >= 0.0)) throw std::invalid_argument("max-min variable bound must be >= 0");
  if (uses.empty() && std::isinf(bound)) {
    throw std::invalid_argument("max-min variable needs a finite bound or a resource");
  }
  int32_t id;
  if (!free_variables_.empty()) {
    id = free_variables_.back();
    free_variables_.pop_back();
  } else {
    id = static_cast<int32_t>(variables_.size());
    variables_.emplace_back();
  }
  Variable& v = variables_[id];
  v.bound = bound;
  v.rate = 0.0;
  v.alive = true;
  v.uses.assign(uses.begin(), uses.end());
  v.position.resize(uses.size());
  for (size_t k = 0; k < uses.size(); ++k) {
    if (!(uses[k].coefficient > 0.0)) throw std::invalid_argument("max-min coefficient must be > 0");
    auto& users = resources_[uses[k].resource].users;
    v.position[k] = static_cast<int32_t>(users.size());
    users.push_back(Incidence{id, static_cast<int32_t>(k), uses[k].coefficient});
  }
  update_static_bound(id);
  ++active_;
  dirty_variables_.push_back(id);
  return id;
}

void MaxMinSolver::remove_variable(int32_t id) {
  Variable& v = variables_[id];
  assert(v.alive);
  for (size_t k = 0; k < v.uses.size(); ++k) {
    const int32_t r = v.uses[k].resource;
    auto& users = resources_[r].users;
    const auto pos = static_cast<size_t>(v.position[k]);
    const Incidence moved = users.back();
    users[pos] = moved;
    variables_[moved.variable].position[moved.use_index] = static_cast<int32_t>(pos);
    users.pop_back();
    // A resource left without users has nothing to re-solve (its scratch is rebuilt by the
    // next solve that reaches it); the flows that still share it are its component.
    if (!users.empty()) dirty_resources_.push_back(r);
  }
  v.alive = false;
  v.rate = 0.0;
  v.uses.clear();
  v.position.clear();
  free_variables_.push_back(id);
  --active_;
}

void MaxMinSolver::set_bound(int32_t id, double bound) {
  if (!(bound >= 0.0)) throw std::invalid_argument("max-min variable bound must be >= 0");
  variables_[id].bound = bound;
  update_static_bound(id);
  dirty_variables_.push_back(id);
}

void MaxMinSolver::solve(std::vector<int32_t>& changed) {
  ++epoch_;
  for (const int32_t r : dirty_resources_) {
    const Resource& res = resources_[r];
    if (res.mark == epoch_ || res.users.empty()) continue;
    if (res.users.size() == 1) {  // the component of its one user
      if (variables_[res.users.front().variable].mark == epoch_) continue;
      collect_component(-1, res.users.front().variable);
      fill_component(changed);
      continue;
    }
    collect_component(r, -1);
    fill_component(changed);
  }
  for (const int32_t v : dirty_variables_) {
    if (!variables_[v].alive || variables_[v].mark == epoch_) continue;
    collect_component(-1, v);
    fill_component(changed);
  }
  dirty_resources_.clear();
  dirty_variables_.clear();
}

// Breadth-first search over the bipartite graph; marks use the current epoch so every
// element is visited by at most one component per solve.
void MaxMinSolver::collect_component(int32_t seed_resource, int32_t seed_variable) {
  comp_resources_.clear();
  comp_variables_.clear();
  if (seed_resource >= 0) {
    resources_[seed_resource].mark = epoch_;
    comp_resources_.push_back(seed_resource);
  } else {
    variables_[seed_variable].mark = epoch_;
    comp_variables_.push_back(seed_variable);
  }
  size_t rh = 0, vh = 0;
  while (rh < comp_resources_.size() || vh < comp_variables_.size()) {
    while (vh < comp_variables_.size()) {
      for (const Use& u : variables_[comp_variables_[vh]].uses) {
        // A resource of this variable alone leads nowhere else; its static_bound covers it.
        if (resources_[u.resource].users.size() > 1 && resources_[u.resource].mark != epoch_) {
          resources_[u.resource].mark = epoch_;
          comp_resources_.push_back(u.resource);
        }
      }
      ++vh;
    }
    while (rh < comp_resources_.size()) {
      for (const Incidence& inc : resources_[comp_resources_[rh]].users) {
        if (variables_[inc.variable].mark != epoch_) {
          variables_[inc.variable].mark = epoch_;
          comp_variables_.push_back(inc.variable);
        }
      }
      ++rh;
    }
  }
}

void MaxMinSolver::fix(int32_t id, double rate) {
  Variable& v = variables_[id];
  v.fixed = true;
  const double old = v.rate;
  v.rate = rate;
  v.changed = std::fabs(rate - old) > 1e-12 * std::max(std::fabs(rate), std::fabs(old));
  for (const Use& u : v.uses) {
    Resource& r = resources_[u.resource];
    r.remaining -= u.coefficient * rate;
    r.weight -= u.coefficient;
  }
}

// A component of one variable that shares no resource: its rate is its static bound (its own
// bound or the least C / a), the value fill_component's general path reaches.
void MaxMinSolver::fill_single(int32_t id, std::vector<int32_t>& changed) {
  Variable& v = variables_[id];
  const double rate = v.static_bound;
  const double old = v.rate;
  v.fixed = true;
  v.effective_bound = rate;
  v.rate = rate;
  v.changed = std::fabs(rate - old) > 1e-12 * std::max(std::fabs(rate), std::fabs(old));
  if (v.changed) changed.push_back(id);
}

void MaxMinSolver::fill_component(std::vector<int32_t>& changed) {
  if (comp_variables_.empty()) return;
  if (comp_variables_.size() == 1 && comp_resources_.empty()) {  // it shares no resource
    fill_single(comp_variables_.front(), changed);
    return;
  }
  // A resource with a single user saturates exactly when that user reaches C / a: it acts
  // as a bound on the variable, so only shared resources enter the heap.
  heap_.clear();
  bounded_.clear();
  for (const int32_t id : comp_variables_) {
    variables_[id].fixed = false;
    variables_[id].effective_bound = variables_[id].static_bound;
  }
  for (const int32_t id : comp_resources_) {
    Resource& r = resources_[id];
    r.remaining = r.capacity;
    r.weight = 0.0;
    for (const Incidence& inc : r.users) r.weight += inc.coefficient;
    if (r.users.size() > 1 && r.weight > 0.0) heap_.emplace_back(r.remaining / r.weight, id);
  }
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  for (const int32_t id : comp_variables_) {
    if (std::isfinite(variables_[id].effective_bound))
      bounded_.emplace_back(variables_[id].effective_bound, id);
  }
  std::sort(bounded_.begin(), bounded_.end());
  size_t next_bound = 0;
  size_t unfixed = comp_variables_.size();

  while (unfixed > 0) {
    while (next_bound < bounded_.size() && variables_[bounded_[next_bound].second].fixed) ++next_bound;
    // Fixing a variable at the current level x <= s_r never lowers s_r, so a heap entry is
    // at most its resource's share: re-key stale entries when they surface (lazy update),
    // then the top is the true minimum.
    double level = 0.0;
    int32_t bottleneck = -1;
    while (!heap_.empty()) {
      const auto [share, id] = heap_.front();
      const Resource& r = resources_[id];
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.pop_back();
      if (!(r.weight > 1e-12)) continue;  // no unfixed user left
      const double current = std::max(r.remaining, 0.0) / r.weight;
      if (current > share * (1.0 + 1e-12)) {
        heap_.emplace_back(current, id);
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
        continue;
      }
      level = current;
      bottleneck = id;
      break;
    }
    const bool have_bound = next_bound < bounded_.size();
    if (have_bound && (bottleneck < 0 || bounded_[next_bound].first <= level)) {
      if (bottleneck >= 0) {  // not used this round: put it back
        heap_.emplace_back(level, bottleneck);
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      }
      fix(bounded_[next_bound].second, bounded_[next_bound].first);
      --unfixed;
      continue;
    }
    assert(bottleneck >= 0);
    // Fix every unfixed user of the bottleneck (fix() never edits user lists).
    for (const Incidence& inc : resources_[bottleneck].users) {
      if (!variables_[inc.variable].fixed) {
        fix(inc.variable, level);
        --unfixed;
      }
    }
  }
  for (const int32_t id : comp_variables_) {
    if (variables_[id].changed) changed.push_back(id);
  }
}

}  // namespace ct::sim
