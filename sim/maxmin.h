// Incremental weighted max-min fair sharing ("fluid" bandwidth sharing).
//
// Resources r have capacities C_r (link directions, NIC ports, NVLink ports); variables v
// (flows, or a pipelined ring that moves at one rate over many links) have an upper bound
// b_v and use resource r with coefficient a_{v,r} > 0 (a ring that crosses a link twice
// has coefficient 2 there). The allocation x is the max-min fair one:
//
//   maximise lexicographically the sorted vector of x_v
//   subject to  sum_v a_{v,r} x_v <= C_r  for every r,   0 <= x_v <= b_v.
//
// Progressive filling (Bertsekas & Gallager, "Data Networks", 6.5.2; SimGrid lmm): every
// unfixed variable grows at the same rate. The first constraint to saturate is the
// resource with the smallest fair share s_r = R_r / W_r (R_r = capacity left, W_r = sum of
// the coefficients of its unfixed variables) or the smallest bound b_v. The variables it
// stops are fixed at that level, R and W of the resources they cross are updated, and the
// loop repeats. Fixing variables at the current level x <= s_r only raises s_r, so the
// shares, sorted once, are lower bounds corrected lazily: an entry that surfaces stale is
// re-keyed into a min-heap, and the least of the two heads, when valid, is the minimum. A
// solve over R resources and U variable-resource incidences costs O(U + R log R) plus the
// re-keys. A resource with one user is folded into that variable's bound (it saturates
// exactly at C / a), so only shared resources are filled, and only shared ones pass a change
// on.
//
// Incrementality: adding/removing a variable or changing a capacity or bound marks it dirty;
// solve() re-solves only what the change moves and returns the variables whose rate changed,
// so the caller re-dates only those (SimGrid's LMM re-solves the modified part of its system
// too; this is an exact form of it). The affected set A starts as the dirty variables and the
// users of a dirty resource (one whose capacity moved, or that lost a variable while
// saturated) and is re-solved by progressive filling against what the others leave of each
// resource. Then it grows along what really moved: the users of every resource that was
// saturated in the last allocation and carries a variable of A whose rate moved join (the
// move passes through it to them), and so do the users of a resource that stopped a variable
// of A at a level below theirs (Bertsekas & Gallager's bottleneck condition: a resource that
// was not saturated can stop a newcomer below its old users); A is re-solved until neither
// adds anyone. Then every variable outside A keeps a valid bottleneck (its saturated resource
// kept its users and their rates) or its bound, and every variable of A has one: the max-min
// allocation of the whole system. After 16 such rounds (maxmin.cpp kLazyRounds) A takes its whole connected
// component (bipartite variable-resource graph), which is exact by construction. Results equal a solve from
// scratch to rounding (a randomized test bounds the difference at 1e-9 relative), not bit for bit: rates of
// variables outside A are not recomputed.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace ct::sim {

class MaxMinSolver {
 public:
  static constexpr double kUnbounded = std::numeric_limits<double>::infinity();
  // A resource counts as saturated when its load is within this fraction of its capacity.
  static constexpr double kSaturated = 1e-9;

  struct Use {
    int32_t resource;
    double coefficient;
  };
  struct Incidence {
    int32_t variable;
    int32_t use_index;   // position of this resource in the variable's use list
    double coefficient;  // the variable's coefficient here (a copy: no chase into its uses)
  };

  int32_t add_resource(double capacity);
  void set_capacity(int32_t resource, double capacity);
  [[nodiscard]] double capacity(int32_t resource) const { return resources_[resource].capacity; }
  // Sum over variables of coefficient x rate at the last solve.
  [[nodiscard]] double load(int32_t resource) const;
  [[nodiscard]] size_t resource_count() const { return resources_.size(); }
  // The live variables that use a resource.
  [[nodiscard]] std::span<const Incidence> users(int32_t resource) const {
    return resources_[resource].users;
  }

  // A variable needs a finite bound or at least one resource.
  int32_t add_variable(double bound, std::span<const Use> uses);
  void remove_variable(int32_t variable);
  void set_bound(int32_t variable, double bound);
  [[nodiscard]] double rate(int32_t variable) const { return variables_[variable].rate; }
  [[nodiscard]] size_t active_variables() const { return active_; }

  // Re-solves what the changes since the last solve can move (above); appends the variables
  // whose rate changed to `changed`.
  void solve(std::vector<int32_t>& changed);
  [[nodiscard]] bool dirty() const { return !dirty_resources_.empty() || !dirty_variables_.empty(); }
  // How many variables the last solve re-solved (the affected set).
  [[nodiscard]] size_t last_solved() const { return affected_.size(); }

 private:
  struct Resource {
    double capacity = 0.0;
    std::vector<Incidence> users;
    // scratch for a solve
    double remaining = 0.0;
    double weight = 0.0;
    uint32_t mark = 0;     // solve epoch in which all its users joined the affected set
    uint32_t checked = 0;  // solve epoch in which its last load was found unsaturated
    uint32_t round = 0;    // progressive-filling round that set remaining / weight
    // Whether the last allocation saturated it, as the last solve that reached it left it
    // (its users' rates and its capacity have not moved since): 0 unknown, 1 no, 2 yes.
    uint8_t saturation = 0;
    // Since the last solve: what removed variables carried here, and whether the capacity moved.
    double removed_load = 0.0;
    bool capacity_moved = false;
  };
  struct Variable {
    double bound = kUnbounded;
    // min(bound, C_r / a_r over every resource it uses): a_r x <= C_r holds whoever else uses
    // r, so this bound is implied by the constraints and leaves the allocation unchanged; it
    // covers every resource the variable uses alone, which therefore never enter a solve.
    double static_bound = kUnbounded;
    double rate = 0.0;
    double prev_rate = 0.0;  // rate at the last solve, kept while the affected set is re-solved
    std::vector<Use> uses;
    std::vector<int32_t> position;  // index of this variable in each used resource's users
    bool alive = false;
    bool fixed = false;
    uint32_t mark = 0;  // solve epoch in which it joined the affected set
  };

  // Add to the affected set; true when anyone was not in it yet.
  bool join(int32_t variable);
  bool join_users(int32_t resource);
  void seed(int32_t resource);
  [[nodiscard]] bool saturated_before(const Resource& r, double removed) const;
  void join_components();
  void fill_affected();
  bool join_faster_users();
  bool join_moved_users();
  // Whether the variable's rate moved since the solve began (beyond rounding).
  static bool moved(const Variable& v);
  void fix(int32_t variable, double rate);
  void update_static_bound(int32_t variable);

  std::vector<Resource> resources_;
  std::vector<Variable> variables_;
  std::vector<int32_t> free_variables_;
  std::vector<int32_t> dirty_resources_, dirty_variables_;
  size_t active_ = 0;
  uint32_t epoch_ = 0, round_ = 0;
  // scratch
  std::vector<int32_t> affected_;
  std::vector<std::pair<double, int32_t>> shares_, requeued_, shares_scratch_;
  std::vector<std::pair<double, int32_t>> bounded_;
  std::vector<std::pair<int32_t, double>> stops_;  // (saturated resource, level) of the last fill
};

// Sorts (share, id) pairs as std::sort with std::pair's operator< does, for shares >= 0 (-0.0
// counts as 0.0, +infinity is allowed): a least-significant-digit radix sort over the id's
// bytes, then the share's (the bits of a non-negative double order as the double does), from
// kRadixSortMin pairs on; std::sort below that or when a share is negative or NaN. `scratch`
// is working space. The fill's share sort (fill_affected) was a tenth of a flow step.
inline constexpr size_t kRadixSortMin = 256;
void sort_shares(std::vector<std::pair<double, int32_t>>& shares,
                 std::vector<std::pair<double, int32_t>>& scratch);

}  // namespace ct::sim
