#include "models/network/packet_analysis.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ct::network {

std::vector<int32_t> find_cycle(int32_t vertex_count, std::span<const std::pair<int32_t, int32_t>> edges) {
  const auto n = static_cast<size_t>(std::max(vertex_count, 0));
  // CSR adjacency.
  std::vector<int32_t> begin(n + 1, 0);
  for (const auto& [a, b] : edges) {
    if (a < 0 || b < 0 || static_cast<size_t>(a) >= n || static_cast<size_t>(b) >= n) {
      throw std::out_of_range("dependency edge " + std::to_string(a) + " -> " + std::to_string(b) +
                              " outside [0, " + std::to_string(n) + ")");
    }
    ++begin[static_cast<size_t>(a) + 1];
  }
  for (size_t v = 0; v < n; ++v) begin[v + 1] += begin[v];
  std::vector<int32_t> adj(edges.size());
  std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
  for (const auto& [a, b] : edges) adj[static_cast<size_t>(fill[static_cast<size_t>(a)]++)] = b;

  enum : uint8_t { kWhite, kGrey, kBlack };
  std::vector<uint8_t> color(n, kWhite);
  std::vector<int32_t> next(n, 0);  // next adjacency index to explore
  std::vector<int32_t> stack;
  for (size_t s = 0; s < n; ++s) {
    if (color[s] != kWhite) continue;
    stack.push_back(static_cast<int32_t>(s));
    color[s] = kGrey;
    next[s] = begin[s];
    while (!stack.empty()) {
      const auto v = static_cast<size_t>(stack.back());
      if (next[v] == begin[v + 1]) {
        color[v] = kBlack;
        stack.pop_back();
        continue;
      }
      const int32_t w = adj[static_cast<size_t>(next[v]++)];
      const auto wi = static_cast<size_t>(w);
      if (color[wi] == kGrey) {  // back edge: the cycle is the stack from w up
        const auto it = std::find(stack.begin(), stack.end(), w);
        return {it, stack.end()};
      }
      if (color[wi] == kWhite) {
        color[wi] = kGrey;
        next[wi] = begin[wi];
        stack.push_back(w);
      }
    }
  }
  return {};
}

double jain_index(std::span<const double> x) {
  if (x.empty()) return 1.0;
  double sum = 0.0;
  double sq = 0.0;
  for (const double v : x) {
    sum += v;
    sq += v * v;
  }
  return sq > 0.0 ? sum * sum / (static_cast<double>(x.size()) * sq) : 1.0;
}

}  // namespace ct::network
