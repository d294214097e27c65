// libFuzzer target: arbitrary bytes through the whole loader (JSON or YAML parse, table
// walk, cross-field checks). Any exception other than ScenarioError is a bug, as is a
// crash, a leak or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
