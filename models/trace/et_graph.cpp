// Execution trace JSON -> EtGraph (format in et_graph.h and op_view.h).
#include "models/trace/et_graph.h"

#include "models/trace/file_io.h"
#include "models/trace/trace_import.h"
#include "sim/input_limits.h"

namespace ct::trace {
namespace {

using nlohmann::json;

struct NodeError {
  std::string what;
};

std::string scalar_text(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// [tensor id, storage id, offset, numel, element size, device]
TensorInfo tensor_of(const json& v, const json& shape, const std::string& dtype) {
  if (!v.is_array() || v.size() < 6 || !v[0].is_number_integer() || !v[1].is_number_integer() ||
      !v[2].is_number_integer() || !v[3].is_number_integer() || !v[4].is_number_integer() ||
      !v[5].is_string()) {
    throw NodeError{"tensor value " + v.dump() +
                    " is not [id, storage, offset, numel, element size, device]"};
  }
  TensorInfo t;
  t.id = v[0].get<int64_t>();
  t.storage = v[1].get<int64_t>();
  t.offset = v[2].get<int64_t>();
  t.numel = v[3].get<int64_t>();
  t.elem_size = static_cast<int>(v[4].get<int64_t>());
  t.device = v[5].get<std::string>();
  t.dtype = dtype;
  if (t.numel < 0 || t.elem_size < 0) throw NodeError{"tensor value " + v.dump() + " has a negative size"};
  if (shape.is_array()) {
    for (const json& s : shape) {
      if (s.is_number_integer()) t.shape.push_back(s.get<int64_t>());
    }
  }
  return t;
}

std::string inner(const std::string& type, const std::string& prefix) {
  const size_t end = type.rfind(')');
  return end == std::string::npos || end < prefix.size() ? std::string()
                                                         : type.substr(prefix.size(), end - prefix.size());
}

std::vector<Arg> args_of(const json& node, const char* which) {
  std::vector<Arg> out;
  const auto it = node.find(which);
  if (it == node.end()) return out;
  if (!it->is_object()) throw NodeError{std::string(which) + " is not an object"};
  const json empty = json::array();
  const json& values = it->contains("values") ? (*it)["values"] : empty;
  const json& shapes = it->contains("shapes") ? (*it)["shapes"] : empty;
  const json& types = it->contains("types") ? (*it)["types"] : empty;
  if (!values.is_array() || !shapes.is_array() || !types.is_array()) {
    throw NodeError{std::string(which) + ": values, shapes and types must be arrays"};
  }
  if (types.size() != values.size()) {
    throw NodeError{std::string(which) + ": " + std::to_string(values.size()) + " values but " +
                    std::to_string(types.size()) + " types"};
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string type = types[i].is_string() ? types[i].get<std::string>() : std::string();
    const json& shape = i < shapes.size() ? shapes[i] : empty;
    Arg a;
    if (type.rfind("Tensor(", 0) == 0) {
      a.kind = Arg::Kind::tensor;
      a.tensors.push_back(tensor_of(values[i], shape, inner(type, "Tensor(")));
    } else if (type.rfind("GenericList[", 0) == 0 && type.find("Tensor(") != std::string::npos &&
               values[i].is_array()) {
      a.kind = Arg::Kind::tensor_list;
      const size_t open = type.find("Tensor(") + 7, close = type.find(')', open);
      const std::string dtype = close == std::string::npos ? std::string() : type.substr(open, close - open);
      for (size_t j = 0; j < values[i].size(); ++j) {
        a.tensors.push_back(
            tensor_of(values[i][j], shape.is_array() && j < shape.size() ? shape[j] : empty, dtype));
      }
    } else if (type == "None") {
      a.kind = Arg::Kind::none;
    } else {
      a.kind = Arg::Kind::scalar;
      a.scalar = scalar_text(values[i]);
    }
    out.push_back(std::move(a));
  }
  return out;
}

int64_t attr_int(const json& node, const char* name, int64_t fallback) {
  const auto it = node.find("attrs");
  if (it == node.end() || !it->is_array()) return fallback;
  for (const json& a : *it) {
    if (a.is_object() && a.value("name", "") == name && a.contains("value") &&
        a["value"].is_number_integer()) {
      return a["value"].get<int64_t>();
    }
  }
  return fallback;
}

std::string attr_str(const json& node, const char* name) {
  const auto it = node.find("attrs");
  if (it == node.end() || !it->is_array()) return "";
  for (const json& a : *it) {
    if (a.is_object() && a.value("name", "") == name && a.contains("value") && a["value"].is_string()) {
      return a["value"].get<std::string>();
    }
  }
  return "";
}

// A node of the flat layout (schema 1.0.1, 2023: PARAM's and HTA's traces; flat_layout) in the
// layout of 1.0.3 and later: "inputs" / "outputs" as arrays beside "input_shapes" / "input_types"
// (outputs likewise) become {values, shapes, types}; "parent" becomes ctrl_deps; top-level
// rf_id, tid and op_schema become attrs. Nodes already in the later layout pass unchanged.
bool flat_layout(const json& n) {
  return n.is_object() && ((n.contains("inputs") && n["inputs"].is_array()) ||
                           (n.contains("outputs") && n["outputs"].is_array()) || n.contains("parent"));
}

json later_layout(const json& n) {
  json out = n;
  for (const char* which : {"input", "output"}) {
    const std::string plural = std::string(which) + "s";
    if (!n.contains(plural) || !n[plural].is_array()) continue;
    json args = {{"values", n[plural]}};
    for (const char* part : {"shapes", "types"}) {
      const std::string flat_key = std::string(which) + "_" + part;
      if (n.contains(flat_key)) args[part] = n[flat_key];
      out.erase(flat_key);
    }
    out[plural] = std::move(args);
  }
  if (n.contains("parent") && !n.contains("ctrl_deps")) out["ctrl_deps"] = n["parent"];
  json attrs = n.contains("attrs") && n["attrs"].is_array() ? n["attrs"] : json::array();
  for (const char* k : {"rf_id", "tid", "op_schema"}) {
    if (n.contains(k)) attrs.push_back({{"name", k}, {"value", n[k]}});
  }
  out["attrs"] = std::move(attrs);
  return out;
}

}  // namespace

EtGraph read_execution_trace(const std::string& path, const std::string& key) {
  const json doc = kineto::parse_json_text(detail::read_maybe_gzip(path, key), path, key);
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array()) {
    throw TraceError(key + ": " + path + ": not a PyTorch execution trace (no nodes array)");
  }
  EtGraph g;
  g.path = path;
  const json& nodes = doc["nodes"];
  try {
    sim::check_input_limit("trace_events", key + ": " + path, static_cast<int64_t>(nodes.size()));
  } catch (const sim::InputLimitError& e) {
    throw TraceError(e.what());
  }
  g.nodes.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    json converted;
    const json& n = flat_layout(nodes[i]) ? (converted = later_layout(nodes[i])) : nodes[i];
    const std::string where = key + ": " + path + ": node #" + std::to_string(i);
    if (!n.is_object() || !n.contains("id") || !n["id"].is_number_integer() || !n.contains("name") ||
        !n["name"].is_string()) {
      throw TraceError(where + ": expected an object with an integer id and a string name");
    }
    EtNode node;
    node.id = n["id"].get<int64_t>();
    const std::string named = where + " (id " + std::to_string(node.id) + ")";
    if (g.by_id.count(node.id) != 0) throw TraceError(named + ": duplicate id");
    try {
      node.op.name = n["name"].get<std::string>();
      if (n.contains("ctrl_deps")) {
        if (!n["ctrl_deps"].is_number_integer()) throw NodeError{"ctrl_deps is not an integer"};
        node.parent = n["ctrl_deps"].get<int64_t>();
        if (node.parent == node.id) node.parent = -1;
      }
      node.rf_id = attr_int(n, "rf_id", -1);
      node.tid = attr_int(n, "tid", -1);
      node.op.schema = attr_str(n, "op_schema");
      node.op.inputs = args_of(n, "inputs");
      node.op.outputs = args_of(n, "outputs");
      node.op.outputs_known = true;
    } catch (const NodeError& e) {
      throw TraceError(named + " '" + node.op.name + "': " + e.what);
    }
    g.by_id[node.id] = g.nodes.size();
    g.nodes.push_back(std::move(node));
  }
  for (const EtNode& node : g.nodes) {
    if (node.parent >= 0 && g.by_id.count(node.parent) == 0) {
      throw TraceError(key + ": " + path + ": node id " + std::to_string(node.id) + " '" + node.op.name +
                       "': ctrl_deps " + std::to_string(node.parent) + " is not a node");
    }
  }
  // The parent chains must end at a root: walk each chain once; meeting a node of the current
  // walk again is a cycle.
  std::vector<uint8_t> state(g.nodes.size(), 0);  // 0 new, 1 on the current walk, 2 done
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::vector<size_t> walk;
    for (size_t j = i; state[j] != 2;) {
      if (state[j] == 1) {
        throw TraceError(key + ": " + path + ": node id " + std::to_string(g.nodes[j].id) + " '" +
                         g.nodes[j].op.name + "': its ctrl_deps chain is a cycle");
      }
      state[j] = 1;
      walk.push_back(j);
      if (g.nodes[j].parent < 0) break;
      j = g.by_id.at(g.nodes[j].parent);
    }
    for (const size_t w : walk) state[w] = 2;
  }
  return g;
}

}  // namespace ct::trace
