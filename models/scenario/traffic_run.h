// Network-only studies (`traffic` section): synthetic patterns as transfers on the chosen
// backend, reporting completion time, flow completion time percentiles and goodput.
//   incast:      GPU 0 of nodes 1..fan_in each send `size` to GPU 0 of node 0
//   permutation: every GPU of the first `nodes` nodes sends `size` to another GPU, a random
//                derangement drawn from the scenario seed
//   all_to_all:  every GPU sends size / n to each of the other n - 1 (n <= 4,096)
//   collective:  one NCCL-like `op` of `size` per rank over every GPU of the first `nodes` nodes
//   websearch / hadoop / file: flows with start times (traffic_flows.h)
// Every pattern but collective reports its flows (tables.flows: src, dst, bytes, start, FCT;
// the first 100,000), the FCT percentiles of all flows and of short ones (< 100 KB, with their
// slowdown over an idle path) and the mean and minimum throughput of long flows (>= 1 MB, or
// the background incast's).
// In packet mode the report's `network` section carries ECN marks, PFC pauses, drops and
// storms, and `pause_storm` faults make a NIC send pause frames from their `at` time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "models/network/link_table.h"
#include "models/network/packet_network.h"
#include "models/scenario/config.h"

namespace ct::scenario {

// Writes report["traffic"] and report["network"] (and, when given, every fabric link's load);
// returns the events simulated.
uint64_t run_traffic(const Config& config, nlohmann::json& report,
                     network::FabricLinkTable* fabric_links = nullptr);

// The packet-mode section of a report's `network`: ECN marks, CNPs, PFC pauses and paused time,
// drops, storms, the pause tree, victims, the deepest queue.
nlohmann::json packet_report(const network::PacketStats& stats);

}  // namespace ct::scenario
