// ECMP routing over the port graph.
//
// Tables. Every switch with a NIC attached is a destination "slot". For slot t,
// dist_t(v) = length of the shortest path v -> t over usable switch-to-switch directions,
// computed by one BFS from t that walks directions backwards (u -> w is usable). NICs never
// forward traffic, so they are not part of these paths. Cost: slots x switch links, e.g.
// 160 x 45K directions for the default cluster.
//
// Route from NIC s to NIC d (s != d):
//  1. First and last hop: over every pair (usable s -> a, usable b -> d) minimise
//     2 + dist_b(a); ties (planes, dual-homed NICs) are broken by hash(key, s).
//  2. At every switch u with dist_b(u) = k > 0, the candidates are the usable directions
//     u -> v with v a switch and dist_b(v) = k - 1 (parallel cables are separate candidates);
//     take candidate number hash(key, u) mod count, in CSR order.
//  3. Finish with b -> d.
// key = splitmix64 mix of (s, d, flow_id) (hash.h). The result is a shortest path over usable
// links; degraded links stay eligible (only capacity changes). No path: NoRouteError.
// Routing::dmodk replaces the hash of step 2 by the destination's digit: with D the index of
// d (NICs numbered leaf by leaf) and u1 the switch links of d's leaf b, a leaf takes candidate
// D mod count and a higher switch (D / u1) mod count (Zahavi's D-mod-K: the first digit picks
// the spine, the next the core). Step 1's ties (planes, dual-homed NICs) stay hashed: NCCL
// spreads a NIC's queue pairs over its ports.
#include <algorithm>
#include <array>
#include <string>

#include "models/topology/hash.h"
#include "models/topology/topology.h"

namespace ct::topology {

namespace {
constexpr uint16_t kUnreachable = 0xFFFF;
}  // namespace

void Topology::compute_routes() {
  ++routing_epoch_;
  const int switches = switch_count();
  int slots = 0;
  for (int32_t s : slot_of_switch_) slots = s >= 0 ? s + 1 : slots;
  dist_.assign(static_cast<size_t>(slots) * static_cast<size_t>(switches), kUnreachable);
  std::vector<VertexId> queue(static_cast<size_t>(switches));
  for (int i = 0; i < switches; ++i) {
    const int slot = slot_of_switch_[i];
    if (slot < 0) continue;
    const VertexId target = nic_count_ + i;
    if (vertex_down_[target]) continue;
    uint16_t* row = dist_.data() + static_cast<size_t>(slot) * static_cast<size_t>(switches);
    row[i] = 0;
    size_t head = 0;
    size_t tail = 0;
    queue[tail++] = target;
    while (head < tail) {
      const VertexId w = queue[head++];
      const auto next = static_cast<uint16_t>(row[w - nic_count_] + 1);
      for (int32_t k = out_begin_[w]; k < switch_end_[w]; ++k) {
        const VertexId u = out_targets_[k];
        if (row[u - nic_count_] != kUnreachable || !usable_[out_links_[k] ^ 1]) continue;
        row[u - nic_count_] = next;
        queue[tail++] = u;
      }
    }
  }
}

int Topology::hop_count(int src_nic, int dst_nic) const {
  check_nic(src_nic, "hop_count");
  check_nic(dst_nic, "hop_count");
  if (src_nic == dst_nic) return 0;
  int best = kUnreachable;
  for (LinkDir a : out_links(src_nic)) {
    if (!usable_[a]) continue;
    for (LinkDir b : out_links(dst_nic)) {
      if (!usable_[b ^ 1]) continue;
      const int h = dist(slot_of_switch_[dst_[b] - nic_count_], dst_[a]);
      if (h < best) best = h;
    }
  }
  return best == kUnreachable ? -1 : best + 2;
}

// The shortest-path DAG, level by level: the first-hop switches of every best (first, last)
// pair, then at each level the usable next hops one step closer to the last hop's slot.
std::vector<VertexId> Topology::switches_on_paths(int src_nic, int dst_nic,
                                                  std::vector<LinkDir>* links) const {
  check_nic(src_nic, "switches_on_paths");
  check_nic(dst_nic, "switches_on_paths");
  std::vector<VertexId> out;
  const int best = hop_count(src_nic, dst_nic);
  if (src_nic == dst_nic || best < 0) return out;
  std::vector<uint8_t> seen(static_cast<size_t>(switch_count()), 0);
  for (LinkDir a : out_links(src_nic)) {
    if (!usable_[a]) continue;
    for (LinkDir b : out_links(dst_nic)) {
      if (!usable_[b ^ 1]) continue;
      const int slot = slot_of_switch_[dst_[b] - nic_count_];
      if (dist(slot, dst_[a]) + 2 != best) continue;
      std::vector<VertexId> level{dst_[a]};
      for (int k = best - 2; k >= 0; --k) {
        std::vector<VertexId> next;
        for (const VertexId u : level) {
          if (seen[static_cast<size_t>(u - nic_count_)] & 2) continue;
          seen[static_cast<size_t>(u - nic_count_)] |= 3;  // on a path; expanded
          for (int32_t i = out_begin_[u]; i < switch_end_[u] && k > 0; ++i) {
            const VertexId v = out_targets_[i];
            if (usable_[out_links_[i]] && dist(slot, v) == k - 1) {
              next.push_back(v);
              if (links != nullptr) links->push_back(out_links_[i]);
            }
          }
        }
        level = std::move(next);
      }
      // Expansion marks are per (first, last) pair: clear bit 1 (expanded), keep bit 0 (on a path).
      for (uint8_t& m : seen) m &= 1;
    }
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i] & 1) out.push_back(nic_count_ + static_cast<VertexId>(i));
  if (links != nullptr) {
    std::sort(links->begin(), links->end());
    links->erase(std::unique(links->begin(), links->end()), links->end());
  }
  return out;
}

void Topology::set_routing(Routing r) {
  routing_ = r;
  ++routing_epoch_;
}

Path Topology::route(int src_nic, int dst_nic, uint64_t flow_id) const {
  Path p;
  route_into(src_nic, dst_nic, flow_id, p);
  return p;
}

void Topology::route_into(int src_nic, int dst_nic, uint64_t flow_id, Path& out, int port,
                          bool* unique) const {
  check_nic(src_nic, "route");
  check_nic(dst_nic, "route");
  out.clear();
  if (unique != nullptr) *unique = true;
  if (src_nic == dst_nic) return;
  const uint64_t key =
      detail::flow_key(static_cast<uint64_t>(src_nic), static_cast<uint64_t>(dst_nic), flow_id);

  // 1. First and last hop.
  const std::span<const LinkDir> first = out_links(src_nic);
  const auto allowed = [&](LinkDir a) {
    return usable_[a] &&
           (port < 0 || (static_cast<size_t>(port) < first.size() && a == first[static_cast<size_t>(port)]));
  };
  int best = kUnreachable;
  uint64_t ties = 0;
  for (LinkDir a : first) {
    if (!allowed(a)) continue;
    for (LinkDir b : out_links(dst_nic)) {
      if (!usable_[b ^ 1]) continue;
      const int h = dist(slot_of_switch_[dst_[b] - nic_count_], dst_[a]);
      if (h < best) {
        best = h;
        ties = 1;
      } else if (h == best) {
        ++ties;
      }
    }
  }
  if (best == kUnreachable) {
    throw NoRouteError("topology: no usable path from NIC " + std::to_string(src_nic) + " (" +
                       vertices_[src_nic].name + ") to NIC " + std::to_string(dst_nic) + " (" +
                       vertices_[dst_nic].name + ")" +
                       (port >= 0 ? " through port " + std::to_string(port) : std::string()));
  }
  if (unique != nullptr && ties > 1) *unique = false;
  uint64_t pick = detail::hop_hash(key, static_cast<uint64_t>(src_nic)) % ties;
  LinkDir last = -1;
  int slot = -1;
  for (LinkDir a : first) {
    if (!allowed(a)) continue;
    for (LinkDir b : out_links(dst_nic)) {
      if (!usable_[b ^ 1]) continue;
      const int s = slot_of_switch_[dst_[b] - nic_count_];
      if (dist(s, dst_[a]) != best) continue;
      if (pick-- == 0) {
        out.push_back(a);
        last = b ^ 1;
        slot = s;
        break;
      }
    }
    if (last >= 0) break;
  }

  // 2. Switch hops: gather the candidates in one pass (two passes past kMaxGather).
  const bool dmodk = routing_ == Routing::dmodk;
  const uint64_t dest = dmodk ? static_cast<uint64_t>(dmodk_dest_[last]) : 0;
  const VertexId leaf = src_[last];  // d's leaf: its links to switches come first in the CSR
  const uint64_t dest_up =
      dmodk ? dest / static_cast<uint64_t>(std::max(1, switch_end_[leaf] - out_begin_[leaf])) : 0;
  constexpr int32_t kMaxGather = 512;
  std::array<LinkDir, kMaxGather> cand;
  const size_t row = static_cast<size_t>(slot) * static_cast<size_t>(switch_count());
  const uint16_t* dist_row = dist_.data() + row;  // index by switch: vertex - nic_count_
  VertexId u = dst_[out.back()];
  for (int k = best; k > 0; --k) {
    const auto want = static_cast<uint16_t>(k - 1);
    const auto eligible = [&](int32_t i) {
      return dist_row[out_targets_[i] - nic_count_] == want && usable_[out_links_[i]];
    };
    const int32_t begin = out_begin_[u];
    const int32_t end = switch_end_[u];
    const uint64_t h =
        dmodk ? (vertices_[u].tier <= 1 ? dest : dest_up) : detail::hop_hash(key, static_cast<uint64_t>(u));
    LinkDir chosen = -1;
    if (end - begin <= kMaxGather) {
      uint32_t count = 0;
      for (int32_t i = begin; i < end; ++i) {
        if (eligible(i)) cand[count++] = out_links_[i];
      }
      if (unique != nullptr && count > 1 && !dmodk) *unique = false;
      chosen = cand[static_cast<uint32_t>(h % count)];
    } else {
      uint64_t count = 0;
      for (int32_t i = begin; i < end; ++i) count += eligible(i) ? 1 : 0;
      if (unique != nullptr && count > 1 && !dmodk) *unique = false;
      uint64_t choice = h % count;
      for (int32_t i = begin; i < end && chosen < 0; ++i) {
        if (eligible(i) && choice-- == 0) chosen = out_links_[i];
      }
    }
    out.push_back(chosen);
    u = dst_[chosen];
  }

  // 3. Last hop.
  out.push_back(last);
}

}  // namespace ct::topology
