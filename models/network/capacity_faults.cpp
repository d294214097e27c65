#include "models/network/capacity_faults.h"

#include <algorithm>
#include <stdexcept>

#include "models/network/cluster.h"
#include "models/network/network.h"
#include "models/topology/topology.h"

namespace ct::network {

std::vector<int32_t> find_links(const Cluster& cluster, const std::string& link, const std::string& key) {
  std::vector<int32_t> out;
  const size_t arrow = link.find("->");
  std::string forward = link, backward;
  if (arrow == std::string::npos) {
    const size_t dash = link.find('-');
    if (dash != std::string::npos) {
      forward = link.substr(0, dash) + "->" + link.substr(dash + 1);
      backward = link.substr(dash + 1) + "->" + link.substr(0, dash);
    }
  }
  for (int32_t r = 0; r < cluster.link_dir_count(); ++r) {
    const std::string name = cluster.resource_name(r);
    if (name == forward || (!backward.empty() && name == backward)) out.push_back(r);
  }
  if (out.empty()) {
    throw std::invalid_argument(key + ".link: got '" + link + "', expected a link of the topology, " +
                                (cluster.link_dir_count() > 0
                                     ? "e.g. '" + cluster.resource_name(0) + "' (one direction)"
                                     : std::string("but this cluster has no fabric links")) +
                                " or 'a-b' for both directions");
  }
  return out;
}

// Every direction into a fabric vertex (NIC or switch) is the reverse of one out of it.
namespace {
void add_links_of(const topology::Topology& topo, topology::VertexId v, bool outgoing,
                  std::vector<int32_t>& out) {
  for (const topology::LinkDir d : topo.out_links(v)) {
    out.push_back(topology::Topology::reverse(d));
    if (outgoing) out.push_back(d);
  }
}
}  // namespace

std::vector<int32_t> links_into_nic(const Cluster& cluster, int node, int nic, const std::string& key) {
  std::vector<int32_t> out;
  const int first = nic >= 0 ? nic : 0, last = nic >= 0 ? nic : cluster.nics_per_node() - 1;
  for (int n = first; n <= last; ++n)
    add_links_of(cluster.topology(), node * cluster.nics_per_node() + n, false, out);
  if (out.empty()) {
    throw std::invalid_argument(key + ": node " + std::to_string(node) +
                                (nic >= 0 ? " nic " + std::to_string(nic) : "") +
                                " has no fabric link into it");
  }
  return out;
}

std::vector<CapacityFault> resolve(const Cluster& cluster, const std::vector<LinkFaultSpec>& specs) {
  std::vector<CapacityFault> out;
  for (const LinkFaultSpec& s : specs) {
    CapacityFault f{s, {}, -1};
    if (!s.switch_name.empty()) {
      const auto v = cluster.topology().find_vertex(s.switch_name);
      if (!v || cluster.topology().vertex(*v).kind != topology::VertexKind::switch_) {
        throw std::invalid_argument(
            s.key + ".switch: got '" + s.switch_name +
            "', expected a switch of the topology (e.g. 'leaf0', 'spine0' or 'spine0.pod0')");
      }
      f.switch_vertex = *v;
      add_links_of(cluster.topology(), *v, true, f.resources);
    } else {
      f.resources =
          s.link.empty() ? links_into_nic(cluster, s.node, s.nic, s.key) : find_links(cluster, s.link, s.key);
    }
    out.push_back(std::move(f));
  }
  return out;
}

CapacityFaults::CapacityFaults(sim::Simulation& sim, Network& net, Cluster& cluster,
                               std::vector<CapacityFault> faults)
    : net_(net), cluster_(cluster), faults_(std::move(faults)), active_(faults_.size(), 0) {
  for (size_t i = 0; i < faults_.size(); ++i) {
    const LinkFaultSpec& f = faults_[i].spec;
    if (!f.down && !(f.factor > 0.0 && f.factor <= 1.0)) {
      throw std::invalid_argument(f.key + ".factor: got " + std::to_string(f.factor) +
                                  ", expected a share in (0, 1]");
    }
    sim.schedule_at(sim::Time::zero() + f.at, *this, 2 * i);
    if (f.duration > sim::Duration::zero())
      sim.schedule_at(sim::Time::zero() + f.at + f.duration, *this, 2 * i + 1);
  }
}

void CapacityFaults::on_event(uint64_t tag) {
  const size_t i = tag / 2;
  const bool start = tag % 2 == 0;
  active_[i] = start ? 1 : 0;
  const CapacityFault& f = faults_[i];
  if (f.switch_vertex >= 0) {
    bool failed = false;  // while any active switch_down names it
    for (size_t j = 0; j < faults_.size(); ++j)
      failed = failed || (active_[j] && faults_[j].switch_vertex == f.switch_vertex);
    if (failed && !cluster_.topology().switch_failed(f.switch_vertex))
      cluster_.topology().fail_switch(f.switch_vertex);
    if (!failed && cluster_.topology().switch_failed(f.switch_vertex))
      cluster_.topology().restore_switch(f.switch_vertex);
  } else if (f.spec.down) {
    // A direction is down while any active link_down covers it.
    std::vector<topology::LinkDir> down, up;
    for (const int32_t r : f.resources) {
      bool covered = false;
      for (size_t j = 0; j < faults_.size(); ++j) {
        if (active_[j] && faults_[j].spec.down &&
            std::find(faults_[j].resources.begin(), faults_[j].resources.end(), r) !=
                faults_[j].resources.end()) {
          covered = true;
        }
      }
      (covered ? down : up).push_back(r);
    }
    if (!down.empty()) cluster_.topology().set_link_states(down, topology::LinkState::down, false);
    if (!up.empty()) cluster_.topology().set_link_states(up, topology::LinkState::up, false);
  }
  for (const int32_t r : f.resources) apply(r);
  if (f.spec.down && start) net_.reroute_after_failure(f.spec.retransmit_timeout);
}

// The resource's rate: its capacity in the topology (zero while down) times every active
// degradation on it.
void CapacityFaults::apply(int32_t resource) {
  double factor = 1.0;
  for (size_t i = 0; i < faults_.size(); ++i) {
    if (!active_[i] || faults_[i].spec.down) continue;  // failures act through the topology's capacity
    for (const int32_t r : faults_[i].resources) {
      if (r == resource) factor *= faults_[i].spec.factor;
    }
  }
  net_.set_resource_capacity(resource,
                             sim::Bandwidth::bits_per_s(cluster_.resource_capacity_bps(resource) * factor));
}

}  // namespace ct::network
