#include "models/scenario/loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "models/scenario/model_presets.h"
#include "models/scenario/param_table.h"
#include "sim/input_limits.h"
#include "sim/json_dom.h"

namespace ct::scenario {
namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// List items are declared as "faults[].field"; messages name them "faults[3].field", so the
// declared prefix is dropped (and the caller prepends the item's own).
constexpr std::string_view kListItemPrefix = "faults[].";
std::string item_relative(const std::string& path) {
  return path.rfind(kListItemPrefix, 0) == 0 ? path.substr(kListItemPrefix.size()) : path;
}

std::string shown(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Offset of the first byte that is not part of well-formed UTF-8, or npos.
size_t invalid_utf8_at(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || (len == 2 && c < 0xc2) || i + len > text.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

// Rejects nesting deeper than the scenario_nesting limit before any recursive parser sees the text.
void check_nesting(std::string_view text) {
  const int64_t kMaxNesting = sim::input_limit("scenario_nesting");
  int64_t depth = 0;
  for (const char c : text) {
    if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) {
        throw ScenarioError(
            {"document: nesting deeper than " + std::to_string(kMaxNesting) +
             " levels (the scenario_nesting limit; raise it with --limit scenario_nesting=N)"});
      }
    } else if (c == ']' || c == '}') {
      depth = std::max<int64_t>(0, depth - 1);
    }
  }
  int64_t indent = 0;
  bool at_line_start = true;
  for (const char c : text) {
    if (c == '\n') {
      at_line_start = true;
      indent = 0;
    } else if (at_line_start && (c == ' ' || c == '-')) {
      if (++indent > 2 * kMaxNesting)
        throw ScenarioError(
            {"document: indentation deeper than " + std::to_string(2 * kMaxNesting) + " columns"});
    } else {
      at_line_start = false;
    }
  }
}

// A YAML 1.2 core-schema number ([-+]? (.d+ | d+(.d*)?) ([eE][-+]?d+)?) in JSON's spelling: no
// leading '+', no leading zeros, a digit on both sides of the point; nullopt when s is not one.
std::optional<std::string> json_number_spelling(const std::string& s) {
  size_t i = 0;
  std::string sign;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    if (s[i] == '-') sign = "-";
    ++i;
  }
  const size_t int_begin = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  std::string whole = s.substr(int_begin, i - int_begin);
  std::string frac;
  bool point = false;
  if (i < s.size() && s[i] == '.') {
    point = true;
    const size_t f = ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    frac = s.substr(f, i - f);
  }
  if (whole.empty() && frac.empty()) return std::nullopt;
  std::string exp;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    const size_t e = i++;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const size_t digits = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == digits) return std::nullopt;
    exp = s.substr(e, i - e);
  }
  if (i != s.size()) return std::nullopt;
  const size_t nonzero = whole.find_first_not_of('0');
  whole = nonzero == std::string::npos ? "0" : whole.substr(nonzero);
  return sign + whole + (point ? "." + (frac.empty() ? std::string("0") : frac) : std::string()) + exp;
}

nlohmann::json yaml_scalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted: always a string
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  // Numbers: let the JSON grammar decide, so YAML and JSON read the same digits alike, after
  // respelling what YAML 1.2's core schema also reads as numbers (+1, .5, 5., 007; NeMo
  // configs write data weights as .0333).
  const std::optional<std::string> number = json_number_spelling(s);
  if (!number) return s;
  const auto as_json = nlohmann::json::parse(*number, nullptr, false);
  if (!as_json.is_discarded() && as_json.is_number()) return as_json;
  return s;
}

// YAML -> JSON, counting every node as it is expanded: an alias is a reference in yaml-cpp's
// graph but a copy here, so nested aliases ("billion laughs") stop at the yaml_nodes limit
// instead of exhausting memory. A key given twice in one mapping is an error naming its path.
struct YamlWalk {
  int64_t nodes = 0;
  int64_t limit = sim::input_limit("yaml_nodes");
  // Aliases nest without showing in the text (an anchor may even name itself: b: &b [*b]),
  // so the depth is checked again here, against the same scenario_nesting limit.
  int64_t max_depth = sim::input_limit("scenario_nesting");

  nlohmann::json convert(const YAML::Node& node, const std::string& path, int64_t depth = 0) {
    if (depth > max_depth) {
      throw ScenarioError(
          {(path.empty() ? std::string("document") : path) + ": nesting deeper than " +
           std::to_string(max_depth) +
           " levels through YAML aliases (an anchor that contains itself?); the scenario_nesting "
           "limit, raise it with --limit scenario_nesting=N"});
    }
    if (++nodes > limit) {
      try {
        sim::input_limit_exceeded("yaml_nodes", "document", nodes, true);
      } catch (const sim::InputLimitError& e) {
        throw ScenarioError({e.what()});
      }
    }
    switch (node.Type()) {
      case YAML::NodeType::Map: {
        nlohmann::json obj = nlohmann::json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) throw ScenarioError({"document: mapping keys must be plain names"});
          const std::string& key = kv.first.Scalar();
          const std::string here = path.empty() ? key : path + "." + key;
          if (obj.contains(key)) {
            throw ScenarioError({here + ": given twice (line " + std::to_string(kv.first.Mark().line + 1) +
                                 "), expected each key once"});
          }
          obj[key] = convert(kv.second, here, depth + 1);
        }
        return obj;
      }
      case YAML::NodeType::Sequence: {
        nlohmann::json arr = nlohmann::json::array();
        size_t i = 0;
        for (const auto& item : node)
          arr.push_back(convert(item, path + "[" + std::to_string(i++) + "]", depth + 1));
        return arr;
      }
      case YAML::NodeType::Scalar: {
        nlohmann::json v = yaml_scalar(node);
        // A plain scalar in number grammar that did not parse as a number overflowed.
        if (v.is_string() && node.Tag() != "!" && json_number_spelling(v.get_ref<const std::string&>())) {
          throw ScenarioError({(path.empty() ? std::string("document") : path) + ": " + v.get<std::string>() +
                               " is beyond the range of a number (about 1.8e308)"});
        }
        return v;
      }
      default:
        return nullptr;
    }
  }
};

// JSON with the key path of every problem: a key given twice in one object, and a syntax error
// or a number beyond double's range (NaN, Infinity, 1e400) at the key being read.
class ScenarioDom : public sim::JsonDomBuilder {
 protected:
  bool keep(const std::string& key) override {
    const json* obj = current_object();
    if (obj != nullptr && obj->contains(key)) {
      throw ScenarioError({path() + ": given twice, expected each key once"});
    }
    return true;
  }
};

nlohmann::json parse_json_checked(std::string_view text) {
  try {
    return ScenarioDom().parse(text);
  } catch (const sim::JsonDomBuilder::ParseFailure& e) {
    const std::string where = e.where.empty() ? std::string("document") : e.where;
    if (e.overflow)
      throw ScenarioError({where + ": a number beyond the range of a double (about 1.8e308): " + e.what()});
    throw ScenarioError({where + ": not valid JSON: " + e.what()});
  }
}

// Converts one JSON value to the parameter's kind; returns an empty string on success.
template <typename Target>
std::string convert(const ParamSpec<Target>& p, const nlohmann::json& v, Value& out) {
  auto expected = [&](const std::string& what) { return "got " + shown(v) + ", expected " + what; };
  try {
    switch (p.kind) {
      case Kind::count:
      case Kind::integer: {
        double d;
        if (v.is_number_integer())
          d = static_cast<double>(v.get<int64_t>());
        else if (v.is_number_float())
          d = v.get<double>();
        else
          return expected(p.kind == Kind::count ? "a whole number >= 0" : "a whole number");
        if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > 9e15) return expected("a whole number");
        if (p.kind == Kind::count && d < 0) return expected("a whole number >= 0");
        out.i = v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(d);
        out.d = static_cast<double>(out.i);
        break;
      }
      case Kind::real:
      case Kind::fraction:
        if (!v.is_number()) return expected(p.kind == Kind::real ? "a number" : "a fraction between 0 and 1");
        out.d = v.get<double>();
        if (!std::isfinite(out.d)) return expected("a finite number");
        if (p.kind == Kind::fraction && (out.d < 0 || out.d > 1))
          return expected("a fraction between 0 and 1");
        break;
      case Kind::boolean:
        if (!v.is_boolean()) return expected("true or false");
        out.b = v.get<bool>();
        return "";
      case Kind::text:
        if (!v.is_string()) return expected("a string");
        out.s = v.get<std::string>();
        if (!p.choices.empty() && std::find(p.choices.begin(), p.choices.end(), out.s) == p.choices.end()) {
          return expected("one of " + join(p.choices, ", "));
        }
        return "";
      case Kind::duration:
      case Kind::long_duration:
      case Kind::bytes:
      case Kind::rate:
      case Kind::power: {
        if (!v.is_string()) {
          const char* example = p.kind == Kind::duration        ? "'500ns'"
                                : p.kind == Kind::long_duration ? "'30d'"
                                : p.kind == Kind::bytes         ? "'64MiB'"
                                : p.kind == Kind::rate          ? "'400Gbps'"
                                                                : "'700W'";
          return expected(std::string("a ") + std::string(kind_name(p.kind)) +
                          " with its unit as a string, like " + example);
        }
        const std::string s = v.get<std::string>();
        if (p.kind == Kind::duration) {
          out.duration = sim::parse_duration(s);
          out.d = out.duration.seconds();
        } else if (p.kind == Kind::long_duration) {
          out.d = sim::parse_duration_seconds(s);
        } else if (p.kind == Kind::bytes) {
          out.bytes = sim::parse_bytes(s);
          out.d = out.bytes.as_double();
        } else if (p.kind == Kind::rate) {
          out.rate = sim::parse_rate(s);
          out.d = out.rate.bps();
        } else {
          out.power = sim::parse_power(s);
          out.d = out.power.watts;
        }
        return "";
      }
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  if (out.d < p.min) return "got " + shown(v) + ", expected at least " + nlohmann::json(p.min).dump();
  if (out.d > p.max) return "got " + shown(v) + ", expected at most " + nlohmann::json(p.max).dump();
  return "";
}

// Megatron-LM / NeMo / Hugging Face names of our keys (the last component of an unknown key,
// dashes or underscores): an unknown key spelled the framework's way points at ours.
std::string framework_alias(const std::string& path) {
  static const std::map<std::string, std::string> aliases = {
      {"num_layers", "training_job.model.layers"},
      {"num_hidden_layers", "training_job.model.layers"},
      {"hidden_size", "training_job.model.hidden"},
      {"num_attention_heads", "training_job.model.heads"},
      {"num_query_groups", "training_job.model.kv_heads"},
      {"num_key_value_heads", "training_job.model.kv_heads"},
      {"kv_channels", "training_job.model.head_dim"},
      {"ffn_hidden_size", "training_job.model.ffn_hidden"},
      {"intermediate_size", "training_job.model.ffn_hidden"},
      {"seq_len", "training_job.model.seq_length"},
      {"encoder_seq_length", "training_job.model.seq_length"},
      {"max_position_embeddings", "training_job.model.seq_length"},
      {"padded_vocab_size", "training_job.model.vocab"},
      {"vocab_size", "training_job.model.vocab"},
      {"untie_embeddings_and_output_weights", "training_job.model.tied_embeddings"},
      {"share_embeddings_and_output_weights", "training_job.model.tied_embeddings"},
      {"tie_word_embeddings", "training_job.model.tied_embeddings"},
      {"swiglu", "training_job.model.activation"},
      {"num_experts", "training_job.model.moe.experts"},
      {"num_moe_experts", "training_job.model.moe.experts"},
      {"moe_router_topk", "training_job.model.moe.top_k"},
      {"moe_ffn_hidden_size", "training_job.model.moe.expert_ffn_hidden"},
      {"tensor_model_parallel_size", "training_job.parallelism.tensor_parallel"},
      {"pipeline_model_parallel_size", "training_job.parallelism.pipeline_parallel"},
      {"virtual_pipeline_model_parallel_size", "training_job.parallelism.virtual_pipeline"},
      {"context_parallel_size", "training_job.parallelism.context_parallel"},
      {"expert_model_parallel_size", "training_job.parallelism.expert_parallel"},
      {"expert_tensor_parallel_size", "training_job.parallelism.expert_tensor_parallel"},
      {"data_parallel_size", "training_job.parallelism.data_parallel"},
      {"use_distributed_optimizer", "training_job.parallelism.zero_stage"},
      {"train_iters", "training_job.steps"},
      {"fp8", "training_job.runtime.precision"},
      {"fp8_format", "training_job.runtime.precision"},
      {"fp4", "training_job.runtime.precision"},
      {"fp4_recipe", "training_job.runtime.precision"},
      {"num_nodes", "cluster.nodes"},
      {"devices", "cluster.gpus_per_node"},
  };
  std::string last = path.substr(path.find_last_of('.') + 1);
  std::replace(last.begin(), last.end(), '-', '_');
  while (!last.empty() && last.front() == '_') last.erase(last.begin());
  const auto it = aliases.find(last);
  return it == aliases.end() ? "" : it->second;
}

template <typename Target>
class TableWalker {
 public:
  explicit TableWalker(const std::vector<ParamSpec<Target>>& table) : table_(table) {
    for (size_t i = 0; i < table.size(); ++i) {
      index_[table[i].path] = i;
      std::string prefix = table[i].path;
      for (size_t dot = prefix.rfind('.'); dot != std::string::npos; dot = prefix.rfind('.')) {
        prefix.resize(dot);
        groups_.insert(prefix);
      }
    }
  }

  // Assigns every key of `obj` under `prefix`; records which paths were given.
  void walk(const nlohmann::json& obj, const std::string& prefix, Target& target,
            std::vector<std::string>& problems, std::vector<std::string>& given,
            const std::string& shown_prefix) const {
    for (const auto& [key, value] : obj.items()) {
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      const std::string display = shown_prefix + item_relative(path);
      const auto it = index_.find(path);
      if (it != index_.end()) {
        const auto& p = table_[it->second];
        Value v;
        std::string problem = convert(p, value, v);
        if (problem.empty()) {
          try {
            p.assign(target, v);
          } catch (const std::exception& e) {
            problem = "got " + shown(value) + ", " + e.what();
          }
        }
        if (!problem.empty()) problems.push_back(display + ": " + problem);
        given.push_back(path);
      } else if (groups_.count(path)) {
        if (!value.is_object()) {
          problems.push_back(display + ": got " + shown(value) + ", expected a section (an object of keys)");
        } else {
          walk(value, path, target, problems, given, shown_prefix);
        }
      } else {
        problems.push_back(display + ": unknown key" + suggestion(path));
      }
    }
  }

  void apply_defaults(Target& target, const std::function<bool(const std::string&)>& section_present,
                      std::vector<std::string>& problems) const {
    for (const auto& p : table_) {
      if (p.fallback.empty() || !section_present(p.path)) continue;
      Value v;
      const std::string problem = convert(p, nlohmann::json::parse(p.fallback), v);
      if (!problem.empty()) throw std::logic_error("bad default for " + p.path + ": " + problem);
      p.assign(target, v);
    }
    (void)problems;
  }

  void check_required(const std::vector<std::string>& given,
                      const std::function<bool(const std::string&)>& section_present,
                      std::vector<std::string>& problems, const std::string& shown_prefix) const {
    for (const auto& p : table_) {
      if (!p.fallback.empty() || !section_present(p.path)) continue;
      if (std::find(given.begin(), given.end(), p.path) == given.end()) {
        const std::string display = shown_prefix + item_relative(p.path);
        problems.push_back(display + ": missing; expected " + std::string(kind_name(p.kind)) + " (" + p.doc +
                           ")");
      }
    }
  }

 private:
  std::string suggestion(const std::string& path) const {
    std::string best;
    size_t best_distance = 4;
    auto consider = [&](const std::string& candidate) {
      const size_t d = edit_distance(path, candidate);
      if (d < best_distance) {
        best_distance = d;
        best = candidate;
      }
    };
    for (const auto& p : table_) consider(p.path);
    for (const auto& g : groups_) consider(g);
    if (const std::string ours = framework_alias(path); !ours.empty()) best = ours;
    return best.empty() ? "" : " (did you mean '" + item_relative(best) + "'?)";
  }

  const std::vector<ParamSpec<Target>>& table_;
  std::map<std::string, size_t> index_;
  std::set<std::string> groups_;
};

std::string top_section(const std::string& path) {
  const size_t dot = path.find('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

ScenarioError::ScenarioError(std::vector<std::string> problems)
    : std::runtime_error("invalid scenario:\n  " + join(problems, "\n  ")), problems_(std::move(problems)) {}

nlohmann::json parse_document(std::string_view text, Format format) {
  try {
    sim::check_input_limit("scenario_bytes", "document", static_cast<int64_t>(text.size()));
  } catch (const sim::InputLimitError& e) {
    throw ScenarioError({e.what()});
  }
  if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    throw ScenarioError({"document: not valid UTF-8 at byte " + std::to_string(bad)});
  }
  check_nesting(text);
  if (format == Format::automatic) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    format = (first != std::string_view::npos && text[first] == '{') ? Format::json : Format::yaml;
  }
  nlohmann::json doc;
  if (format == Format::json) {
    doc = parse_json_checked(text);
  } else {
    try {
      doc = YamlWalk{}.convert(YAML::Load(std::string(text)), "");
    } catch (const YAML::Exception& e) {
      throw ScenarioError({"document: not valid YAML: line " + std::to_string(e.mark.line + 1) + ", column " +
                           std::to_string(e.mark.column + 1) + ": " + e.msg});
    }
  }
  if (!doc.is_object())
    throw ScenarioError({"document: expected an object of sections at the top, got " + shown(doc)});
  return doc;
}

void apply_override(nlohmann::json& document, std::string_view path, const nlohmann::json& value) {
  if (path.empty()) throw ScenarioError({"override: empty key path"});
  nlohmann::json* node = &document;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (key.empty()) throw ScenarioError({"override '" + std::string(path) + "': empty key in path"});
    if (!node->is_object()) {
      throw ScenarioError(
          {"override '" + std::string(path) + "': '" + key + "' is inside a value that is not a section"});
    }
    if (dot == std::string_view::npos) {
      (*node)[key] = value;
      return;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = nlohmann::json::object();
    start = dot + 1;
  }
}

void apply_override(nlohmann::json& document, std::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    throw ScenarioError({"override '" + std::string(assignment) + "': expected KEY.PATH=VALUE"});
  }
  const std::string_view raw = assignment.substr(eq + 1);
  auto value = nlohmann::json::parse(raw, nullptr, false);
  if (value.is_discarded()) value = std::string(raw);
  apply_override(document, assignment.substr(0, eq), value);
}

Config to_config(const nlohmann::json& document) {
  std::vector<std::string> problems;
  Config config = to_config(document, problems);
  if (!problems.empty()) throw ScenarioError(std::move(problems));
  return config;
}

Config to_config(const nlohmann::json& document, std::vector<std::string>& problems) {
  static const TableWalker<Config> walker(param_table());
  static const TableWalker<FaultSpec> fault_walker(fault_param_table());
  Config config;
  if (!document.is_object()) throw ScenarioError({"document: expected an object of sections"});
  for (const auto& [key, value] : document.items()) {
    const auto& names = section_names();
    if (std::find(names.begin(), names.end(), key) != names.end()) config.sections.insert(key);
  }
  std::vector<std::string> workloads;
  for (const auto& w : workload_sections()) {
    if (config.has(w)) workloads.push_back(w);
  }
  if (workloads.size() != 1) {
    problems.push_back("document: expected exactly one of training_job, traffic, trace; got " +
                       (workloads.empty() ? std::string("none") : join(workloads, ", ")));
  }
  const auto present = [&](const std::string& path) {
    const std::string section = top_section(path);
    if (section.empty() || section == "cluster" || section == "network" || section == "failures" ||
        section == "recovery" || section == "campaign") {
      return true;
    }
    return config.has(section);
  };
  walker.apply_defaults(config, present, problems);

  nlohmann::json rest = document;
  expand_model_preset(rest, problems);
  std::vector<std::string> given;
  if (rest.contains("faults")) {
    const auto& faults = rest["faults"];
    if (!faults.is_array()) {
      problems.push_back("faults: got " + shown(faults) + ", expected a list of fault objects");
    } else {
      for (size_t i = 0; i < faults.size(); ++i) {
        const std::string shown_prefix = "faults[" + std::to_string(i) + "].";
        if (!faults[i].is_object()) {
          problems.push_back("faults[" + std::to_string(i) + "]: got " + shown(faults[i]) +
                             ", expected an object");
          continue;
        }
        FaultSpec fault;
        std::vector<std::string> fault_given;
        const auto always = [](const std::string&) { return true; };
        fault_walker.apply_defaults(fault, always, problems);
        fault_walker.walk(faults[i], "faults[]", fault, problems, fault_given, shown_prefix);
        fault_walker.check_required(fault_given, always, problems, shown_prefix);
        config.faults.push_back(fault);
      }
    }
    rest.erase("faults");
  }
  walker.walk(rest, "", config, problems, given, "");
  walker.check_required(given, present, problems, "");
  return config;
}

nlohmann::json read_document(const std::string& path, const std::vector<std::string>& overrides) {
  std::string text;
  try {
    text = sim::read_bounded(path, "scenario_bytes", "scenario file '" + path + "'");
  } catch (const std::exception& e) {
    throw ScenarioError({e.what()});
  }
  const bool yaml = path.ends_with(".yaml") || path.ends_with(".yml");
  nlohmann::json doc = parse_document(text, yaml ? Format::yaml : Format::json);
  for (const auto& o : overrides) apply_override(doc, o);
  return doc;
}

}  // namespace ct::scenario
