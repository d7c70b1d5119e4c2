#include "option_table_json.h"

#include <nlohmann/json.hpp>

#include "options.h"
#include "report.h"

namespace blkgen {

std::string OptionTableJson() {
  nlohmann::ordered_json options = nlohmann::ordered_json::array();
  for (const OptionDef& o : JobOptionTable()) {
    nlohmann::ordered_json j;
    j["name"] = std::string(o.name);
    j["default"] =
        o.default_value.empty() ? nlohmann::ordered_json(nullptr)
                                : nlohmann::ordered_json(std::string(o.default_value));
    j["help"] = std::string(o.help);
    j["value_optional"] = o.value_optional;
    j["fio"] = !o.blkgen_only;
    options.push_back(std::move(j));
  }
  nlohmann::ordered_json later = nlohmann::ordered_json::array();
  for (std::string_view n : NotYetSupportedOptions()) later.push_back(std::string(n));
  nlohmann::ordered_json top;
  top["blkgen_version"] = std::string(kBlkgenVersion);
  top["options"] = std::move(options);
  top["not_supported_yet"] = std::move(later);
  return top.dump(2) + "\n";
}

}  // namespace blkgen
