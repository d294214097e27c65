#include <pybind11/stl.h>

#include "models/scenario/cost_estimate.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/model_presets.h"
#include "models/scenario/param_table.h"
#include "models/scenario/runner.h"
#include "models/scenario/schema.h"
#include "python/bindings.h"
#include "sim/input_limits.h"
#include "sim/progress.h"
#include "sim/units.h"

namespace py = pybind11;

namespace ct::python {
namespace {
// The scenario document with the overrides applied (both as JSON text).
nlohmann::json overridden_document(const std::string& document_json, const std::string& overrides_json) {
  nlohmann::json doc = scenario::parse_document(document_json, scenario::Format::json);
  const auto overrides = nlohmann::json::parse(overrides_json);  // named: items() refers to it
  for (const auto& [path, value] : overrides.items()) scenario::apply_override(doc, path, value);
  return doc;
}
}  // namespace

scenario::Config checked_config(const std::string& document_json, const std::string& overrides_json,
                                bool pre_run) {
  return checked_config(overridden_document(document_json, overrides_json), pre_run);
}

scenario::Config checked_config(const nlohmann::json& doc, bool pre_run) {
  // Every problem in one pass: the table walk's, then the cross-field checks on what it read
  // (a key the walk already named is not named again by a rule about it).
  std::vector<std::string> problems;
  scenario::Config c = scenario::to_config(doc, problems);
  if (!problems.empty()) {
    const size_t walk = problems.size();
    try {
      scenario::check_config(c);
    } catch (const scenario::ScenarioError& e) {
      for (const std::string& p : e.problems()) {
        const std::string key = p.substr(0, p.find(':'));
        bool named = false;
        for (size_t i = 0; i < walk; ++i) named = named || problems[i].rfind(key, 0) == 0;
        if (!named) problems.push_back(p);
      }
    } catch (const std::exception&) {  // a rule that cannot judge defaults left by a bad key
    }
    throw scenario::ScenarioError(std::move(problems));
  }
  scenario::check_config(c);
  if (pre_run) {
    if (auto more = scenario::pre_run_problems(c); !more.empty())
      throw scenario::ScenarioError(std::move(more));
  }
  return c;
}

void bind_scenario(py::module_& m) {
  py::register_exception<scenario::ScenarioError>(m, "ScenarioError", PyExc_ValueError);
  py::register_exception<sim::InputLimitError>(m, "InputLimitError", PyExc_ValueError);
  m.def(
      "input_limits",
      [] {
        py::list out;
        for (const sim::InputLimitInfo& l : sim::input_limits()) {
          py::dict d;
          d["name"] = l.name;
          d["default"] = l.default_value;
          d["value"] = l.value;
          d["unit"] = l.unit;
          d["what"] = l.what;
          out.append(d);
        }
        return out;
      },
      "The input limits (sim/input_limits.h): name, default, current value, unit, what each bounds.");
  m.def("set_input_limit", &sim::set_input_limit, py::arg("name"), py::arg("value"),
        "Sets one input limit for this process (ValueError for an unknown name or a value < 1).");
  m.def(
      "schema", [] { return scenario::json_schema().dump(2); }, "JSON Schema of scenario files.");
  m.def("help_text", &scenario::help_text, "Every scenario key with its kind, default and doc.");
  m.def(
      "parse_duration_seconds", [](const std::string& text) { return sim::parse_duration_seconds(text); },
      py::arg("text"),
      "A duration with its unit ('10s', '500ms', '2h'), in seconds, as scenario keys read it; ValueError "
      "naming the problem otherwise.");
  m.def(
      "model_presets",
      [] {
        nlohmann::json out = nlohmann::json::array();
        for (const scenario::ModelPreset& p : scenario::model_presets())
          out.push_back({{"name", p.name}, {"model", p.model}, {"source", p.source}});
        return out.dump();
      },
      "training_job.model.preset: every preset's model keys and source, as JSON text.");
  m.def(
      "read_document", [](const std::string& path) { return scenario::read_document(path, {}).dump(); },
      py::arg("path"), "Reads a JSON or YAML scenario file; returns JSON text.");
  m.def(
      "parse_document",
      [](const std::string& text, const std::string& format) {
        const auto f = format == "yaml"   ? scenario::Format::yaml
                       : format == "json" ? scenario::Format::json
                                          : scenario::Format::automatic;
        return scenario::parse_document(text, f).dump();
      },
      py::arg("text"), py::arg("format") = "auto");
  m.def(
      "progress_start",
      [](double expected_events, double quiet_s) { sim::progress::start(expected_events, quiet_s); },
      py::arg("expected_events"), py::arg("quiet_s") = 5.0,
      "Progress lines on stderr (events, events/s, time left) for the runs that follow, after quiet_s "
      "seconds.");
  m.def("progress_stop", &sim::progress::stop, "Stops the progress lines.");
  m.def(
      "conversion_problems",
      [](const std::string& document_json, const std::string& overrides_json) {
        std::vector<std::string> problems;
        scenario::to_config(overridden_document(document_json, overrides_json), problems);
        return problems;
      },
      py::arg("document_json"), py::arg("overrides_json") = "{}",
      "The table walk's problems alone (unknown keys, types, units, ranges; no cross-key rules).");
  m.def(
      "estimate",
      [](const std::string& document_json, const std::string& overrides_json) {
        const scenario::Config c = checked_config(document_json, overrides_json);
        return scenario::to_json(scenario::estimate_cost(c)).dump();
      },
      py::arg("document_json"), py::arg("overrides_json") = "{}",
      "Events, memory and wall time a run of the scenario would take on the reference machine (JSON).");
  m.def(
      "validate",
      [](const std::string& document_json, const std::string& overrides_json) {
        checked_config(document_json, overrides_json, /*pre_run=*/true);
      },
      py::arg("document_json"), py::arg("overrides_json") = "{}",
      "Raises ScenarioError listing every problem, or returns None.");
  m.def("parameters", [] {
    py::list rows;
    auto add = [&](const auto& p) {
      py::dict d;
      d["path"] = p.path;
      d["kind"] = std::string(scenario::kind_name(p.kind));
      d["default"] = p.fallback.empty() ? py::object(py::none()) : py::object(py::str(p.fallback));
      d["doc"] = p.doc;
      d["choices"] = p.choices;
      rows.append(d);
    };
    for (const auto& p : scenario::param_table()) add(p);
    for (const auto& p : scenario::fault_param_table()) add(p);
    return rows;
  });
}

}  // namespace ct::python
