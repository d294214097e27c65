// Scenario loading: text (JSON or YAML) -> document -> overrides -> typed Config.
//
// Every key is checked against the parameter table: unknown keys (with the nearest known
// key suggested), wrong types, missing units, out-of-range values and missing required
// keys are collected and reported together, each naming its key path, the value and what
// was expected. Nothing falls back silently.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/scenario/config.h"

namespace ct::scenario {

class ScenarioError : public std::runtime_error {
 public:
  explicit ScenarioError(std::vector<std::string> problems);
  [[nodiscard]] const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

enum class Format { json, yaml, automatic };

// Parses JSON or YAML text into a document (YAML plain scalars become numbers/booleans
// where they read as such). Throws ScenarioError with the line and column of a syntax error.
nlohmann::json parse_document(std::string_view text, Format format = Format::automatic);

// Applies "a.b.c=VALUE": VALUE is read as JSON when it parses (numbers, true/false,
// quoted strings, objects), otherwise as a plain string.
void apply_override(nlohmann::json& document, std::string_view assignment);
void apply_override(nlohmann::json& document, std::string_view path, const nlohmann::json& value);

// Converts and checks every key; throws ScenarioError listing every problem.
Config to_config(const nlohmann::json& document);
// The same, appending every problem to `problems` instead of throwing; the keys that had
// problems keep their defaults in the returned Config.
Config to_config(const nlohmann::json& document, std::vector<std::string>& problems);

// Reads a file (format from the extension: .yaml/.yml or JSON) and applies overrides.
nlohmann::json read_document(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace ct::scenario
