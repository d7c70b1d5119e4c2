#include "option_table_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "options.h"

namespace blkgen {
namespace {

TEST(OptionTableJsonTest, ListsEveryOptionOfTheTableInOrder) {
  const nlohmann::json j = nlohmann::json::parse(OptionTableJson());
  const auto& listed = j.at("options");
  ASSERT_EQ(listed.size(), JobOptionTable().size());
  size_t i = 0;
  for (const OptionDef& o : JobOptionTable()) {
    const auto& e = listed.at(i++);
    EXPECT_EQ(e.at("name"), std::string(o.name));
    EXPECT_EQ(e.at("value_optional"), o.value_optional);
    EXPECT_EQ(e.at("fio"), !o.blkgen_only) << o.name;
    if (o.default_value.empty()) {
      EXPECT_TRUE(e.at("default").is_null()) << o.name;
    } else {
      EXPECT_EQ(e.at("default"), std::string(o.default_value));
    }
    // blkgen's own options say so in their help line too.
    EXPECT_EQ(o.help.starts_with("blkgen:"), o.blkgen_only) << o.name;
  }
  EXPECT_EQ(j.at("not_supported_yet").size(), NotYetSupportedOptions().size());
}

}  // namespace
}  // namespace blkgen
