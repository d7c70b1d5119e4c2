#include "io_pattern.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace blkgen {
namespace {

std::vector<uint64_t> Offsets(IoPattern* p, size_t count) {
  std::vector<uint64_t> out;
  IoUnit u;
  while (out.size() < count && p->Next(&u)) out.push_back(u.offset);
  return out;
}

TEST(IoPatternTest, RandomSequenceIsAFixedFunctionOfTheSeed) {
  // Pinned: a change here changes every blklab result; do it on purpose only.
  const uint64_t seed = DeriveSeed(0xb1899bed, 0, 0);
  IoPattern p(RwMode::kRandRead, 0, 16 << 20, 4096, seed, true);
  const std::vector<uint64_t> got = Offsets(&p, 8);
  const std::vector<uint64_t> golden = {8634368, 1544192,  372736,  1933312,
                                        9043968, 14606336, 5140480, 15450112};
  EXPECT_EQ(got, golden);
}

TEST(IoPatternTest, SameInputsSameSequence) {
  IoPattern a(RwMode::kRandWrite, 4096, 1 << 30, 4096, 99, true);
  IoPattern b(RwMode::kRandWrite, 4096, 1 << 30, 4096, 99, true);
  EXPECT_EQ(Offsets(&a, 100000), Offsets(&b, 100000));
}

TEST(IoPatternTest, SeedAndJobIndexChangeTheSequence) {
  IoPattern a(RwMode::kRandRead, 0, 1 << 30, 4096, DeriveSeed(1, 0, 0), false);
  IoPattern b(RwMode::kRandRead, 0, 1 << 30, 4096, DeriveSeed(2, 0, 0), false);
  IoPattern c(RwMode::kRandRead, 0, 1 << 30, 4096, DeriveSeed(1, 1, 0), false);
  const auto oa = Offsets(&a, 64), ob = Offsets(&b, 64), oc = Offsets(&c, 64);
  EXPECT_NE(oa, ob);
  EXPECT_NE(oa, oc);
  EXPECT_NE(DeriveSeed(1, 0, 0), DeriveSeed(1, 0, 1));
}

TEST(IoPatternTest, RandomVisitsEveryBlockOncePerPass) {
  for (uint64_t blocks : {1ULL, 2ULL, 3ULL, 5ULL, 1000ULL, 4097ULL, 65536ULL}) {
    const uint64_t bs = 512;
    IoPattern p(RwMode::kRandRead, 1 << 20, blocks * bs + 100, bs, 5, true);  // tail unused
    EXPECT_EQ(p.blocks(), blocks);
    std::vector<uint64_t> first_pass;
    for (int pass = 0; pass < 2; ++pass) {
      std::set<uint64_t> seen;
      std::vector<uint64_t> order;
      IoUnit u;
      for (uint64_t i = 0; i < blocks; ++i) {
        ASSERT_TRUE(p.Next(&u));
        ASSERT_EQ(u.dir, Dir::kRead);
        ASSERT_EQ(u.length, bs);
        ASSERT_GE(u.offset, 1u << 20);
        ASSERT_EQ((u.offset - (1 << 20)) % bs, 0u);
        ASSERT_LT((u.offset - (1 << 20)) / bs, blocks);
        seen.insert(u.offset);
        order.push_back(u.offset);
      }
      EXPECT_EQ(seen.size(), blocks) << blocks;
      if (pass == 0) first_pass = order;
      if (pass == 1 && blocks > 100) {
        EXPECT_NE(order, first_pass) << "each pass has a new order";
      }
    }
  }
}

TEST(IoPatternTest, OnePassWithoutRepeat) {
  IoPattern p(RwMode::kRandWrite, 0, 10 * 4096, 4096, 3, false);
  IoUnit u;
  int n = 0;
  while (p.Next(&u)) {
    EXPECT_EQ(u.dir, Dir::kWrite);
    ++n;
  }
  EXPECT_EQ(n, 10);
  EXPECT_FALSE(p.Next(&u));
}

TEST(IoPatternTest, SequentialWalksAndWraps) {
  IoPattern p(RwMode::kRead, 8192, 3 * 4096 + 1000, 4096, 0, true);
  EXPECT_EQ(Offsets(&p, 7), (std::vector<uint64_t>{8192, 12288, 16384, 8192, 12288, 16384, 8192}));
  IoPattern once(RwMode::kWrite, 0, 2 * 65536, 65536, 0, false);
  EXPECT_EQ(Offsets(&once, 10), (std::vector<uint64_t>{0, 65536}));
}

TEST(IoPatternTest, PermutationIsABijectionForAwkwardSizes) {
  for (uint64_t n : {1ULL, 2ULL, 7ULL, 64ULL, 65ULL, 1023ULL}) {
    RandomPermutation perm(n, 0x1234);
    std::set<uint64_t> image;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = perm.At(i);
      ASSERT_LT(v, n);
      image.insert(v);
    }
    EXPECT_EQ(image.size(), n);
  }
}

}  // namespace
}  // namespace blkgen
