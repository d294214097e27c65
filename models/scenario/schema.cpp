#include "models/scenario/schema.h"

#include <cmath>
#include <sstream>

#include "models/scenario/param_table.h"

namespace ct::scenario {
namespace {

const char* unit_pattern(Kind kind) {
  switch (kind) {
    case Kind::duration:
    case Kind::long_duration:
      return R"(^\s*[0-9.eE+]+\s*(ps|ns|us|ms|s|min|h|d)\s*$)";
    case Kind::bytes:
      return R"(^\s*[0-9.eE+]+\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$)";
    case Kind::rate:
      return R"(^\s*[0-9.eE+]+\s*([KMGT]?bps|[KMGT]?b/s|[KMGT]?B/s|[KMG]iB/s|[MG]Bps)\s*$)";
    case Kind::power:
      return R"(^\s*[0-9.eE+]+\s*(W|kW|MW)\s*$)";
    default:
      return nullptr;
  }
}

template <typename Target>
nlohmann::json property(const ParamSpec<Target>& p) {
  nlohmann::json s;
  switch (p.kind) {
    case Kind::count:
    case Kind::integer:
      s["type"] = "integer";
      break;
    case Kind::real:
    case Kind::fraction:
      s["type"] = "number";
      break;
    case Kind::boolean:
      s["type"] = "boolean";
      break;
    default:
      s["type"] = "string";
      break;
  }
  if (const char* pattern = unit_pattern(p.kind)) s["pattern"] = pattern;
  double lo = p.min, hi = p.max;
  if (p.kind == Kind::count && lo < 0) lo = 0;
  if (p.kind == Kind::fraction) {
    lo = std::max(lo, 0.0);
    hi = std::min(hi, 1.0);
  }
  if (std::isfinite(lo) && s["type"] != "string") s["minimum"] = lo;
  if (std::isfinite(hi) && s["type"] != "string") s["maximum"] = hi;
  if (!p.choices.empty()) s["enum"] = p.choices;
  if (!p.fallback.empty()) s["default"] = nlohmann::json::parse(p.fallback);
  s["description"] = p.doc;
  s["x-kind"] = std::string(kind_name(p.kind));
  return s;
}

nlohmann::json object_schema() {
  return {{"type", "object"}, {"additionalProperties", false}, {"properties", nlohmann::json::object()}};
}

template <typename Target>
void insert(nlohmann::json& root, const ParamSpec<Target>& p, const std::string& path) {
  nlohmann::json* node = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    auto& props = (*node)["properties"];
    if (dot == std::string::npos) {
      props[key] = property(p);
      if (p.fallback.empty()) (*node)["required"].push_back(key);
      return;
    }
    if (!props.contains(key)) props[key] = object_schema();
    node = &props[key];
    start = dot + 1;
  }
}

}  // namespace

nlohmann::json json_schema() {
  nlohmann::json root = object_schema();
  root["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  root["title"] = "ClusterTwin scenario";
  for (const auto& p : param_table()) insert(root, p, p.path);
  nlohmann::json fault = object_schema();
  for (const auto& p : fault_param_table()) insert(fault, p, p.path.substr(std::string("faults[].").size()));
  root["properties"]["faults"] = {{"type", "array"}, {"items", fault}, {"description", "Injected faults."}};
  root["oneOf"] = nlohmann::json::array();
  for (const auto& w : workload_sections()) root["oneOf"].push_back({{"required", {w}}});
  return root;
}

std::string help_text() {
  std::ostringstream out;
  auto row = [&](const auto& p) {
    out << p.path << "  (" << kind_name(p.kind);
    if (!p.choices.empty()) {
      out << ":";
      for (const auto& c : p.choices) out << " " << c;
    }
    out << ")  default " << (p.fallback.empty() ? "required" : p.fallback) << "\n    " << p.doc << "\n";
  };
  for (const auto& p : param_table()) row(p);
  for (const auto& p : fault_param_table()) row(p);
  return out.str();
}

}  // namespace ct::scenario
