// Link and switch failures.
//
// Rules: a direction is usable iff its own state is up or degraded and neither end vertex is
// a failed switch. Down and failed elements leave the routing tables (recomputed at once, so
// route() stays a pure const lookup); a degraded direction keeps its routes and its capacity
// becomes factor x nominal. Bringing a link up resets its factor to 1.
#include <string>

#include "models/topology/topology.h"

namespace ct::topology {

LinkState Topology::state(LinkDir d) const {
  check_link(d, "state");
  if (!usable_[d]) return LinkState::down;
  return factor_[d] < 1.0 ? LinkState::degraded : LinkState::up;
}

void Topology::refresh_usable(LinkDir d) {
  usable_[d] = static_cast<uint8_t>(link_up_[d] && !vertex_down_[src_[d]] && !vertex_down_[dst_[d]]);
}

void Topology::apply_link_state(LinkDir d, LinkState s, bool both_directions) {
  check_link(d, "set_link_state");
  if (s == LinkState::degraded) {
    throw std::invalid_argument("topology::set_link_state: use degrade_link(" + name(d) +
                                ", factor) to degrade a link");
  }
  const LinkDir dirs[2] = {d, reverse(d)};
  for (int i = 0; i < (both_directions ? 2 : 1); ++i) {
    link_up_[dirs[i]] = s == LinkState::up ? 1 : 0;
    if (s == LinkState::up) factor_[dirs[i]] = 1.0;
    refresh_usable(dirs[i]);
  }
}

void Topology::set_link_state(LinkDir d, LinkState s, bool both_directions) {
  apply_link_state(d, s, both_directions);
  compute_routes();
}

void Topology::set_link_states(std::span<const LinkDir> dirs, LinkState s, bool both_directions) {
  for (LinkDir d : dirs) check_link(d, "set_link_states");
  if (s == LinkState::degraded) {
    throw std::invalid_argument("topology::set_link_states: use degrade_link to degrade links");
  }
  for (LinkDir d : dirs) apply_link_state(d, s, both_directions);
  compute_routes();
}

void Topology::degrade_link(LinkDir d, double factor, bool both_directions) {
  check_link(d, "degrade_link");
  if (!(factor > 0.0 && factor <= 1.0)) {
    throw std::invalid_argument("topology::degrade_link: factor of " + name(d) + " is " +
                                std::to_string(factor) + ", expected a value in (0, 1]");
  }
  factor_[d] = factor;
  if (both_directions) factor_[reverse(d)] = factor;
}

void Topology::fail_switch(VertexId sw) {
  if (sw < nic_count_ || sw >= vertex_count()) {
    throw std::invalid_argument("topology::fail_switch: vertex " + std::to_string(sw) + " is not a switch");
  }
  vertex_down_[sw] = 1;
  for (LinkDir d : out_links(sw)) {
    refresh_usable(d);
    refresh_usable(reverse(d));
  }
  compute_routes();
}

void Topology::restore_switch(VertexId sw) {
  if (sw < nic_count_ || sw >= vertex_count()) {
    throw std::invalid_argument("topology::restore_switch: vertex " + std::to_string(sw) +
                                " is not a switch");
  }
  vertex_down_[sw] = 0;
  for (LinkDir d : out_links(sw)) {
    refresh_usable(d);
    refresh_usable(reverse(d));
  }
  compute_routes();
}

}  // namespace ct::topology
