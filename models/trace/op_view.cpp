// Operator arguments from Kineto's record_shapes fields, dtype sizes, schema mutation marks.
#include "models/trace/op_view.h"

#include <limits>
#include <unordered_map>

namespace ct::trace {
namespace {

using nlohmann::json;

std::vector<int64_t> dims_of(const json& d) {
  std::vector<int64_t> out;
  if (!d.is_array()) return out;
  for (const json& x : d) {
    if (!x.is_number_integer()) return {};
    out.push_back(x.get<int64_t>());
  }
  return out;
}

TensorInfo tensor_of(const std::vector<int64_t>& shape, const std::string& dtype) {
  TensorInfo t;
  t.shape = shape;
  t.numel = 1;
  for (const int64_t s : shape) {  // a negative or overflowing product leaves the tensor undefined
    if (s < 0 || (s > 0 && t.numel > std::numeric_limits<int64_t>::max() / s)) {
      t.numel = 0;
      break;
    }
    t.numel *= s;
  }
  t.dtype = dtype;
  t.elem_size = dtype_size(dtype);
  return t;
}

const json* field(const json* args, const char* k) {
  if (args == nullptr) return nullptr;
  const auto it = args->find(k);
  return it != args->end() && it->is_array() ? &*it : nullptr;
}

}  // namespace

int dtype_size(const std::string& dtype) {
  static const std::unordered_map<std::string, int> sizes = {{"c10::BFloat16", 2},
                                                             {"BFloat16", 2},
                                                             {"c10::Half", 2},
                                                             {"Half", 2},
                                                             {"float", 4},
                                                             {"double", 8},
                                                             {"long int", 8},
                                                             {"long", 8},
                                                             {"int", 4},
                                                             {"short int", 2},
                                                             {"short", 2},
                                                             {"signed char", 1},
                                                             {"unsigned char", 1},
                                                             {"bool", 1},
                                                             {"c10::Float8_e4m3fn", 1},
                                                             {"c10::Float8_e5m2", 1},
                                                             {"c10::complex<float>", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

OpView kineto_op_view(const kineto::CpuOp& op) {
  OpView v;
  v.name = op.name;
  const json* dims = field(op.args, "Input Dims");
  const json* types = field(op.args, "Input type");
  const json* concrete = field(op.args, "Concrete Inputs");
  if (dims == nullptr || types == nullptr) return v;
  for (size_t i = 0; i < dims->size() && i < types->size(); ++i) {
    Arg a;
    const std::string type = (*types)[i].is_string() ? (*types)[i].get<std::string>() : std::string();
    if (type == "TensorList") {
      a.kind = Arg::Kind::tensor_list;
      for (const json& d : (*dims)[i]) a.tensors.push_back(tensor_of(dims_of(d), ""));
    } else if (dtype_size(type) > 0) {
      a.kind = Arg::Kind::tensor;
      a.tensors.push_back(tensor_of(dims_of((*dims)[i]), type));
    } else if (!type.empty() || (concrete != nullptr && i < concrete->size())) {
      a.kind = Arg::Kind::scalar;
      if (concrete != nullptr && i < concrete->size() && (*concrete)[i].is_string())
        a.scalar = (*concrete)[i].get<std::string>();
    }
    v.inputs.push_back(std::move(a));
  }
  return v;
}

bool on_gpu(const OpView& op) {
  bool any_device = false;
  for (const auto* list : {&op.inputs, &op.outputs}) {
    for (const Arg& a : *list) {
      for (const TensorInfo& t : a.tensors) {
        if (t.device.rfind("cuda", 0) == 0) return true;
        any_device = any_device || !t.device.empty();
      }
    }
  }
  return !any_device;
}

std::vector<bool> mutated_arguments(const std::string& schema) {
  std::vector<bool> out;
  const size_t open = schema.find('(');
  if (open == std::string::npos) return out;
  int depth = 0;
  std::string arg;
  for (size_t i = open + 1; i < schema.size(); ++i) {
    const char c = schema[i];
    if (depth == 0 && (c == ',' || c == ')')) {
      const size_t first = arg.find_first_not_of(' ');
      if (first != std::string::npos && arg.substr(first) != "*") {
        const size_t type_end = arg.find(' ', first);
        out.push_back(arg.substr(first, type_end - first).find('!') != std::string::npos);
      }
      arg.clear();
      if (c == ')') break;
      continue;
    }
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    arg.push_back(c);
  }
  return out;
}

}  // namespace ct::trace
