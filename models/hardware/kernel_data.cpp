#include "models/hardware/kernel_data.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "sim/input_limits.h"

namespace ct::hardware {
namespace {

template <typename T>
T positive_field(const nlohmann::json& entry, const char* key, const std::string& where) {
  if (!entry.contains(key) || !entry.at(key).is_number()) {
    throw std::runtime_error(where + ": missing numeric field '" + key + "'");
  }
  const T value = entry.at(key).get<T>();
  if (!(value > T{0})) throw std::runtime_error(where + ": field '" + key + "' must be positive");
  return value;
}

}  // namespace

MemoryOp memory_op_class(const std::string& op) {
  if (op == "add" || op == "gelu" || op == "copy" || op == "mul" || op == "dropout" || op == "adam") {
    return MemoryOp::streaming;
  }
  if (op == "layernorm" || op == "rmsnorm") return MemoryOp::normalization;
  if (op == "softmax") return MemoryOp::softmax;
  throw std::invalid_argument("unknown element-wise op '" + op + "'");
}

KernelMeasurements load_kernel_measurements(const std::string& path) {
  const std::string text = sim::read_bounded(path, "input_file_bytes", "calibration file '" + path + "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("calibration file '" + path + "': " + e.what());
  }
  KernelMeasurements out;
  out.device = doc.value("device", "");
  out.sm_count = positive_field<int>(doc, "sm_count", path);
  out.hbm_copy_bytes_per_s = positive_field<double>(doc, "hbm_copy_GBps", path) * 1e9;
  for (size_t i = 0; i < doc.at("gemm_bf16").size(); ++i) {
    const auto& e = doc.at("gemm_bf16")[i];
    const std::string where = path + ": gemm_bf16[" + std::to_string(i) + "]";
    out.gemm.push_back({positive_field<int64_t>(e, "M", where), positive_field<int64_t>(e, "N", where),
                        positive_field<int64_t>(e, "K", where), positive_field<double>(e, "s", where)});
  }
  for (size_t i = 0; i < doc.at("sdpa_causal_bf16").size(); ++i) {
    const auto& e = doc.at("sdpa_causal_bf16")[i];
    const std::string where = path + ": sdpa_causal_bf16[" + std::to_string(i) + "]";
    out.attention.push_back(
        {positive_field<int64_t>(e, "batch", where), positive_field<int64_t>(e, "heads", where),
         positive_field<int64_t>(e, "seq", where), positive_field<int64_t>(e, "head_dim", where),
         positive_field<double>(e, "fwd_s", where), positive_field<double>(e, "fwdbwd_s", where)});
  }
  for (size_t i = 0; i < doc.at("elementwise_bf16").size(); ++i) {
    const auto& e = doc.at("elementwise_bf16")[i];
    const std::string where = path + ": elementwise_bf16[" + std::to_string(i) + "]";
    ElementwiseSample s;
    s.op = e.at("op").get<std::string>();
    s.op_class = memory_op_class(s.op);
    s.elements = positive_field<int64_t>(e, "elements", where);
    s.bytes_moved = 4 * s.elements;  // bf16 read + write
    s.seconds = positive_field<double>(e, "s", where);
    out.elementwise.push_back(s);
  }
  return out;
}

}  // namespace ct::hardware
