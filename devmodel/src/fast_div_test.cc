#include "fast_div.h"

#include <gtest/gtest.h>

#include "rng.h"

namespace devmodel::internal {
namespace {

TEST(FastDivTest, MatchesDivisionForEdgeAndRandomOperands) {
  Rng rng(8);
  for (int i = 0; i < 3000; ++i) {
    std::uint32_t d =
        i < 600 ? i + 1 : static_cast<std::uint32_t>(rng.Next() >> (32 + rng.Below(32)));
    if (d == 0) d = 1;
    const FastDivU32 div(d);
    for (std::uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 0xFFFFFFFEu, 0xFFFFFFFFu}) {
      ASSERT_EQ(div.Div(n), n / d) << n << " / " << d;
      ASSERT_EQ(div.Mod(n), n % d) << n << " % " << d;
    }
    for (int j = 0; j < 200; ++j) {
      const auto n = static_cast<std::uint32_t>(rng.Next() >> (32 + rng.Below(32)));
      ASSERT_EQ(div.Div(n), n / d) << n << " / " << d;
    }
  }
}

}  // namespace
}  // namespace devmodel::internal
