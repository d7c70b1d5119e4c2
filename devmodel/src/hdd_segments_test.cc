#include "hdd_segments.h"

#include <gtest/gtest.h>

namespace devmodel::internal {
namespace {

TEST(HddSegmentIndexTest, FiltersByRangeAndReplacesInvalidThenLeastRecent) {
  HddSegmentIndex index(4, 1000000000);  // 1e9 sectors: buckets of 2^18 sectors
  EXPECT_EQ(index.Victim(), 0u);         // all invalid: lowest first
  index.Set(0, 100, 2148);
  index.Set(1, 500000000, 500002048);
  EXPECT_EQ(index.Victim(), 2u);
  index.Set(2, 700000000, 700000008);
  index.Set(3, 900000000, 900000008);
  EXPECT_EQ(index.Victim(), 0u);  // least recently set
  index.Touch(0);
  EXPECT_EQ(index.Victim(), 1u);
  EXPECT_TRUE(index.MayOverlap(2000, 2001));
  EXPECT_TRUE(index.Overlaps(0, 2147, 2148));
  EXPECT_FALSE(index.Overlaps(0, 2148, 3000));
  EXPECT_FALSE(index.MayOverlap(300000000, 300000008));  // empty bucket: no scan needed
  EXPECT_TRUE(index.MayOverlap(299999000, 500000001));   // spans into segment 1's bucket
  index.Set(1, 0, 0);                                    // invalidated
  EXPECT_FALSE(index.MayOverlap(500000000, 500000001));
  EXPECT_FALSE(index.Overlaps(1, 500000000, 500000001));
  EXPECT_EQ(index.Victim(), 1u);
  index.Set(1, 10, 20);  // valid again: most recently used
  EXPECT_EQ(index.Victim(), 2u);
}

}  // namespace
}  // namespace devmodel::internal
