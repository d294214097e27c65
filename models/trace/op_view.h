// One PyTorch operator call as the two trace formats describe it: its name, its arguments
// (tensors with shape, element size and, from the execution trace, tensor/storage ids and
// device; scalars as text) and, from the execution trace only, its outputs.
//
// Execution trace (ET) argument encoding, per index i of inputs/outputs:
//   types[i] "Tensor(<dtype>)": values[i] = [tensor id, storage id, offset, numel, element
//            size, device], shapes[i] = the sizes;
//   types[i] "GenericList[Tensor(...),...]": values[i] a list of such tuples, shapes[i] their
//            sizes (a tensor list);
//   anything else is a scalar (Int, Double, Bool, String, None, Device, lists of ints), kept
//            as text: booleans as "True"/"False" like Kineto's "Concrete Inputs".
// Kineto (record_shapes) encodes inputs only: "Input Dims"[i] (sizes), "Input type"[i] (the
// dtype for a tensor, e.g. "c10::BFloat16", "float"; "TensorList" for a list, whose dims are
// then a list of sizes), "Concrete Inputs"[i] (scalars as text).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/trace/kineto_events.h"

namespace ct::trace {

struct TensorInfo {
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int elem_size = 0;                          // bytes per element, 0 when unknown
  std::string dtype;                          // as written, e.g. "c10::BFloat16", "float"
  std::string device;                         // "cuda:0", "cpu", "" (unknown or undefined tensor)
  int64_t id = -1, storage = -1, offset = 0;  // ET only
  [[nodiscard]] bool defined() const { return numel > 0 && elem_size > 0; }
  [[nodiscard]] double bytes() const { return static_cast<double>(numel) * elem_size; }
};

struct Arg {
  enum class Kind { none, scalar, tensor, tensor_list } kind = Kind::none;
  std::vector<TensorInfo> tensors;  // one for a tensor, any number for a list
  std::string scalar;               // text of a scalar
};

struct OpView {
  std::string name;    // e.g. "aten::addmm"
  std::string schema;  // ET op_schema, "" when unknown
  std::vector<Arg> inputs, outputs;
  bool outputs_known = false;  // true for the execution trace
};

// Bytes per element of a dtype name ("c10::BFloat16" 2, "float" 4, ...); 0 when unknown.
int dtype_size(const std::string& dtype);

// The operator as Kineto recorded it (inputs only; empty when record_shapes was off).
OpView kineto_op_view(const kineto::CpuOp& op);

// True when a tensor argument or output lies on a CUDA device (an ET op without devices,
// e.g. from Kineto, counts as on the GPU).
bool on_gpu(const OpView& op);

// Per schema argument (in order, the keyword-only marker skipped): whether the op writes it,
// i.e. its type carries an alias annotation with '!' such as "Tensor(a!)" or "Tensor(a!)[]".
std::vector<bool> mutated_arguments(const std::string& schema);

}  // namespace ct::trace
