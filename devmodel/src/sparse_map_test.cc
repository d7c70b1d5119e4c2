#include "sparse_map.h"

#include <gtest/gtest.h>

#include <unordered_map>

#include "rng.h"

namespace devmodel::internal {
namespace {

TEST(SparseMapTest, AllocatesOnlyWhereWritten) {
  SparseMap map(1ull << 30);  // 4 TiB of 4 KiB units
  const std::uint64_t empty = map.MemoryBytes();
  EXPECT_EQ(map.Get(123456789), SparseMap::kUnmapped);
  map.Set(123456789, 42);
  EXPECT_EQ(map.Get(123456789), 42u);
  EXPECT_EQ(map.Get(123456788), SparseMap::kUnmapped);
  map.Set(5, SparseMap::kUnmapped);  // unmapping an untouched region allocates nothing
  EXPECT_EQ(map.sparse_regions(), 1u);
  EXPECT_EQ(map.dense_regions(), 0u);
  EXPECT_LE(map.MemoryBytes(), empty + 64);  // one small table, not a 16 KiB array
  map.Set(123456789, SparseMap::kUnmapped);  // the last entry of a region frees it
  EXPECT_EQ(map.sparse_regions(), 0u);
  EXPECT_EQ(map.MemoryBytes(), empty);
}

TEST(SparseMapTest, FillingRegionTurnsDenseAndKeepsValues) {
  SparseMap map(4 * SparseMap::kRegionSize);
  const std::uint64_t base = SparseMap::kRegionSize;
  for (std::uint32_t i = 0; i < SparseMap::kDenseThreshold; ++i) map.Set(base + 7 * i, i);
  EXPECT_EQ(map.dense_regions(), 0u);
  map.Set(base + 1, 1000000);
  EXPECT_EQ(map.dense_regions(), 1u);
  EXPECT_EQ(map.sparse_regions(), 0u);
  for (std::uint32_t i = 0; i < SparseMap::kDenseThreshold; ++i) {
    ASSERT_EQ(map.Get(base + 7 * i), i);
  }
  EXPECT_EQ(map.Get(base + 1), 1000000u);
  EXPECT_EQ(map.Get(base + 2), SparseMap::kUnmapped);
}

// Random sets and removals against a reference, across sparse tables that
// grow, shrink to nothing (backward-shift removal) and turn dense.
TEST(SparseMapTest, MatchesReferenceUnderRandomSetsAndRemovals) {
  constexpr std::uint64_t kSize = 8 * SparseMap::kRegionSize;
  SparseMap map(kSize);
  std::unordered_map<std::uint64_t, std::uint32_t> ref;
  Rng rng(17);
  for (int i = 0; i < 200000; ++i) {
    // Region r gets about 2^r / 64 of the traffic: some stay sparse.
    const std::uint64_t region = 63 - __builtin_clzll(1 + rng.Below(255));
    const std::uint64_t index = region * SparseMap::kRegionSize + rng.Below(1500);
    if (rng.Below(3) == 0) {
      map.Set(index, SparseMap::kUnmapped);
      ref.erase(index);
    } else {
      const auto value = static_cast<std::uint32_t>(rng.Below(1u << 31));
      map.Set(index, value);
      ref[index] = value;
    }
  }
  for (std::uint64_t index = 0; index < kSize; ++index) {
    const auto it = ref.find(index);
    ASSERT_EQ(map.Get(index), it == ref.end() ? SparseMap::kUnmapped : it->second) << index;
  }
  EXPECT_GT(map.dense_regions(), 0u);
  EXPECT_GT(map.sparse_regions(), 0u);
}

// Scattered writes (the worst case for fixed-size leaves): about 2 entries
// per region cost a small table each.
TEST(SparseMapTest, ScatteredEntriesCostTensOfBytesEach) {
  SparseMap map(1ull << 30);
  const std::uint64_t empty = map.MemoryBytes();
  Rng rng(3);
  constexpr int kEntries = 1 << 19;
  for (int i = 0; i < kEntries; ++i) map.Set(rng.Below(1ull << 30), i);
  const double per_entry = static_cast<double>(map.MemoryBytes() - empty) / kEntries;
  printf("[ measured ] %d scattered entries over 2^30: %.1f bytes each\n", kEntries, per_entry);
  EXPECT_LT(per_entry, 64.0);
  EXPECT_EQ(map.dense_regions(), 0u);
}

// Entries a formula gives: index * 3 + 1.
class Thrice final : public ImplicitEntries {
 public:
  std::uint32_t At(std::uint64_t index) const override {
    return static_cast<std::uint32_t>(index * 3 + 1);
  }
};

TEST(SparseMapTest, ImplicitRegionsReadTheFormulaUntilWritten) {
  Thrice thrice;
  SparseMap map(3 * SparseMap::kRegionSize + 5);  // a short last region
  const std::uint64_t bare = map.MemoryBytes();
  map.SetAllImplicit(&thrice);
  EXPECT_EQ(map.implicit_regions(), 4u);
  EXPECT_EQ(map.MemoryBytes(), bare);
  EXPECT_EQ(map.Get(0), 1u);
  EXPECT_EQ(map.Get(3 * SparseMap::kRegionSize + 4), (3 * SparseMap::kRegionSize + 4) * 3 + 1);
  // A write materializes its region only, with the formula's other entries.
  map.Set(SparseMap::kRegionSize + 2, 7);
  EXPECT_EQ(map.implicit_regions(), 3u);
  EXPECT_EQ(map.dense_regions(), 1u);
  EXPECT_EQ(map.Get(SparseMap::kRegionSize + 2), 7u);
  EXPECT_EQ(map.Get(SparseMap::kRegionSize + 3), (SparseMap::kRegionSize + 3) * 3 + 1);
  EXPECT_EQ(map.Get(SparseMap::kRegionSize - 1), (SparseMap::kRegionSize - 1) * 3 + 1);
}

}  // namespace
}  // namespace devmodel::internal
