// Model presets: training_job.model.preset names a published architecture whose fields are
// filled in before the scenario is checked; any field given beside the preset wins.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ct::scenario {

struct ModelPreset {
  std::string name;
  nlohmann::json model;  // training_job.model keys
  std::string source;    // where the numbers come from
};

// Every preset, in a stable order.
const std::vector<ModelPreset>& model_presets();
// The preset with this name, or nullptr.
const ModelPreset* find_model_preset(std::string_view name);
// Names known as architectures the twin cannot represent, with the reason (an error says it).
std::string unavailable_model_preset(std::string_view name);

// If document.training_job.model.preset is a string naming a preset, copies the preset's keys
// that the model does not give; an unknown name or a wrong type is appended to `problems`
// (naming the key, the value and the known presets). The preset key itself stays for the
// loader (it is recorded in the config); a rejected one is removed so that it is reported once.
void expand_model_preset(nlohmann::json& document, std::vector<std::string>& problems);

}  // namespace ct::scenario
