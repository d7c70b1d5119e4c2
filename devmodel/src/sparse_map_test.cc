#include "sparse_map.h"

#include <gtest/gtest.h>

namespace devmodel::internal {
namespace {

TEST(SparseMapTest, AllocatesLeavesOnlyWhereWritten) {
  SparseMap map(1ull << 30);  // 4 TiB of 4 KiB units
  const std::uint64_t empty = map.MemoryBytes();
  EXPECT_EQ(map.Get(123456789), SparseMap::kUnmapped);
  map.Set(123456789, 42);
  EXPECT_EQ(map.Get(123456789), 42u);
  EXPECT_EQ(map.Get(123456788), SparseMap::kUnmapped);
  map.Set(5, SparseMap::kUnmapped);  // unmapping an untouched region allocates nothing
  EXPECT_EQ(map.MemoryBytes(), empty + SparseMap::kLeafSize * 4);
}

}  // namespace
}  // namespace devmodel::internal
