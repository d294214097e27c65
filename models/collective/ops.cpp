#include <stdexcept>
#include <string>

#include "models/collective/collective.h"

namespace ct::collective {
namespace {
constexpr Op kOps[] = {Op::all_reduce, Op::all_gather, Op::reduce_scatter,
                       Op::all_to_all, Op::broadcast,  Op::send_recv};
}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::all_reduce:
      return "all_reduce";
    case Op::all_gather:
      return "all_gather";
    case Op::reduce_scatter:
      return "reduce_scatter";
    case Op::all_to_all:
      return "all_to_all";
    case Op::broadcast:
      return "broadcast";
    case Op::send_recv:
      return "send_recv";
  }
  return "?";
}

Op parse_op(std::string_view name) {
  std::string known;
  for (const Op op : kOps) {
    if (op_name(op) == name) return op;
    known += (known.empty() ? "" : ", ") + std::string(op_name(op));
  }
  throw std::invalid_argument("collective op: got \"" + std::string(name) + "\", expected one of " + known);
}

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::automatic:
      return "automatic";
    case Algorithm::ring:
      return "ring";
    case Algorithm::tree:
      return "tree";
    case Algorithm::nvls:
      return "nvls";
    case Algorithm::nvls_tree:
      return "nvls_tree";
  }
  return "?";
}

double bus_factor(Op op, int ranks) {
  const double n = ranks;
  switch (op) {
    case Op::all_reduce:
      return ranks > 1 ? 2.0 * (n - 1) / n : 0.0;
    case Op::all_gather:
    case Op::reduce_scatter:
    case Op::all_to_all:
      return ranks > 1 ? (n - 1) / n : 0.0;
    case Op::broadcast:
    case Op::send_recv:
      return 1.0;
  }
  return 1.0;
}

}  // namespace ct::collective
