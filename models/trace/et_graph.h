// The PyTorch execution trace (ExecutionTraceObserver JSON, schema "1.x-chakra.0.0.4"), gzipped
// or not: {"schema", "nodes": [{"id", "name", "ctrl_deps" (the parent node: the operator this
// one ran inside), "inputs"/"outputs" {"values", "shapes", "types"} (see op_view.h), "attrs":
// [{"name", "value"}] with rf_id (the RecordFunction id Kineto records as "Record function
// id"), tid, op_schema}]}. A node whose ctrl_deps is itself or absent is a root. The flat
// layout of schema 1.0.1 (inputs / input_shapes / input_types side by side, "parent", top-level
// rf_id / tid / op_schema) is read as the same.
// Errors are TraceErrors "<key>: <path>: node #<index> (id <id>): <problem>".
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/trace/op_view.h"

namespace ct::trace {

struct EtNode {
  int64_t id = 0;
  int64_t parent = -1;  // -1 for a root
  int64_t rf_id = -1;   // -1 when the node has none
  int64_t tid = -1;
  OpView op;  // name, schema, inputs, outputs
};

struct EtGraph {
  std::string path;
  std::vector<EtNode> nodes;                  // in file order
  std::unordered_map<int64_t, size_t> by_id;  // id -> index
};

// Throws TraceError naming the file and, for a malformed node, its index and id.
EtGraph read_execution_trace(const std::string& path, const std::string& key = "trace.execution_trace");

}  // namespace ct::trace
