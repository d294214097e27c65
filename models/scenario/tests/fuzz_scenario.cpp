// libFuzzer target: arbitrary bytes through the whole loader (JSON or YAML parse, table
// walk, cross-field checks). Any exception other than ScenarioError is a bug, as is a
// crash, a leak or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "sim/input_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Alias expansion is bounded by yaml_nodes; a lower bound keeps each input fast to refuse.
  static const bool limited = [] {
    ct::sim::set_input_limit("yaml_nodes", 100'000);
    return true;
  }();
  (void)limited;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto format : {ct::scenario::Format::json, ct::scenario::Format::yaml}) {
    try {
      nlohmann::json doc = ct::scenario::parse_document(text, format);
      ct::scenario::Config c = ct::scenario::to_config(doc);
      ct::scenario::check_config(c);
    } catch (const ct::scenario::ScenarioError&) {
    }
  }
  return 0;
}
