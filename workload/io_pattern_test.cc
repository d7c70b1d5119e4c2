#include "io_pattern.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace blkgen {
namespace {

// A single-direction config with a fixed block size.
PatternConfig Fixed(RwMode mode, uint64_t region_offset, uint64_t region_bytes, uint64_t bs,
                    uint64_t seed) {
  PatternConfig c;
  c.mode = mode;
  c.region_offset = region_offset;
  c.region_bytes = region_bytes;
  for (int d = 0; d < kNumDirs; ++d) {
    c.sizes[d] = {BsSplitEntry{bs, 100}};
    c.align[d] = bs;
  }
  c.seed = seed;
  return c;
}

std::vector<IoUnit> Units(IoPattern* p, size_t count) {
  std::vector<IoUnit> out(count);
  for (IoUnit& u : out) p->Next(&u);
  return out;
}

std::vector<uint64_t> Offsets(IoPattern* p, size_t count) {
  std::vector<uint64_t> out;
  for (const IoUnit& u : Units(p, count)) out.push_back(u.offset);
  return out;
}

TEST(IoPatternTest, RandomSequenceIsAFixedFunctionOfTheSeed) {
  // Pinned: a change here changes every blklab result; do it on purpose only.
  IoPattern p(Fixed(RwMode::kRandRead, 0, 16 << 20, 4096, DeriveSeed(0xb1899bed, 0, 0)));
  const std::vector<uint64_t> golden = {8634368, 1544192,  372736,  1933312,
                                        9043968, 14606336, 5140480, 15450112};
  EXPECT_EQ(Offsets(&p, 8), golden);
}

TEST(IoPatternTest, SameInputsSameSequence) {
  JobSpec spec;
  spec.rw = RwMode::kRandRW;
  spec.rwmixread = 70;
  spec.bs = {4096, 4096, 4096};
  spec.bssplit[1] = {{4096, 50}, {65536, 50}};
  for (bool map : {true, false}) {
    spec.norandommap = !map;
    IoPattern a(MakePatternConfig(spec, 4096, 1 << 30, 99));
    IoPattern b(MakePatternConfig(spec, 4096, 1 << 30, 99));
    const auto ua = Units(&a, 50000), ub = Units(&b, 50000);
    for (size_t i = 0; i < ua.size(); ++i) {
      ASSERT_EQ(ua[i].dir, ub[i].dir);
      ASSERT_EQ(ua[i].offset, ub[i].offset);
      ASSERT_EQ(ua[i].length, ub[i].length);
    }
  }
}

TEST(IoPatternTest, SeedAndJobIndexChangeTheSequence) {
  IoPattern a(Fixed(RwMode::kRandRead, 0, 1 << 30, 4096, DeriveSeed(1, 0, 0)));
  IoPattern b(Fixed(RwMode::kRandRead, 0, 1 << 30, 4096, DeriveSeed(2, 0, 0)));
  IoPattern c(Fixed(RwMode::kRandRead, 0, 1 << 30, 4096, DeriveSeed(1, 1, 0)));
  const auto oa = Offsets(&a, 64), ob = Offsets(&b, 64), oc = Offsets(&c, 64);
  EXPECT_NE(oa, ob);
  EXPECT_NE(oa, oc);
  EXPECT_NE(DeriveSeed(1, 0, 0), DeriveSeed(1, 0, 1));
}

TEST(IoPatternTest, RandomVisitsEveryBlockOncePerPass) {
  for (uint64_t blocks : {1ULL, 2ULL, 3ULL, 5ULL, 1000ULL, 4097ULL, 65536ULL}) {
    const uint64_t bs = 512;
    IoPattern p(Fixed(RwMode::kRandRead, 1 << 20, blocks * bs + 100, bs, 5));  // tail unused
    EXPECT_EQ(p.blocks(), blocks);
    std::vector<uint64_t> first_pass;
    for (int pass = 0; pass < 2; ++pass) {
      std::set<uint64_t> seen;
      std::vector<uint64_t> order;
      IoUnit u;
      for (uint64_t i = 0; i < blocks; ++i) {
        p.Next(&u);
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

TEST(IoPatternTest, SequentialWalksAndWraps) {
  IoPattern p(Fixed(RwMode::kRead, 8192, 3 * 4096 + 1000, 4096, 0));
  EXPECT_EQ(Offsets(&p, 7), (std::vector<uint64_t>{8192, 12288, 16384, 8192, 12288, 16384, 8192}));
  IoPattern w(Fixed(RwMode::kWrite, 0, 2 * 65536, 65536, 0));
  const auto units = Units(&w, 3);
  EXPECT_EQ(units[1].offset, 65536u);
  EXPECT_EQ(units[1].dir, Dir::kWrite);
  EXPECT_EQ(units[2].offset, 0u);
}

TEST(IoPatternTest, MixedSequentialKeepsOneCursorPerDirection) {
  // As fio (checked with fio 3.33's write_iolog): reads and writes each walk
  // the region from its start.
  JobSpec spec;
  spec.rw = RwMode::kReadWrite;
  spec.rwmixread = 50;
  spec.bs = {4096, 4096, 4096};
  IoPattern p(MakePatternConfig(spec, 0, 64 << 10, 7));
  uint64_t next[kNumDirs] = {0, 0, 0};
  int reads = 0;
  for (const IoUnit& u : Units(&p, 16)) {
    const int d = static_cast<int>(u.dir);
    ASSERT_LT(d, 2);
    EXPECT_EQ(u.offset, next[d]);
    next[d] += 4096;
    reads += u.dir == Dir::kRead;
  }
  EXPECT_GT(reads, 0);
  EXPECT_LT(reads, 16);
}

TEST(IoPatternTest, RwmixreadSetsTheShareOfReads) {
  for (uint32_t mix : {0u, 30u, 70u, 100u}) {
    JobSpec spec;
    spec.rw = RwMode::kRandRW;
    spec.rwmixread = mix;
    spec.bs = {4096, 4096, 4096};
    IoPattern p(MakePatternConfig(spec, 0, 1 << 30, 3));
    int reads = 0;
    const int n = 20000;
    for (const IoUnit& u : Units(&p, n)) reads += u.dir == Dir::kRead;
    EXPECT_NEAR(100.0 * reads / n, mix, 1.5) << mix;
  }
}

TEST(IoPatternTest, BssplitWeightsAndFit) {
  JobSpec spec;
  spec.rw = RwMode::kRandRead;
  spec.bs = {4096, 4096, 4096};
  spec.bssplit[0] = {{4096, 10}, {65536, 50}, {32768, 40}};
  const uint64_t region = 1 << 24;
  IoPattern p(MakePatternConfig(spec, 0, region, 11));
  std::map<uint32_t, int> count;
  const int n = 30000;
  for (const IoUnit& u : Units(&p, n)) {
    ASSERT_LE(u.offset + u.length, region);
    ASSERT_EQ(u.offset % 4096, 0u);  // random map slots: the smallest size
    ++count[u.length];
  }
  ASSERT_EQ(count.size(), 3u);
  EXPECT_NEAR(100.0 * count[4096] / n, 10, 1.5);
  EXPECT_NEAR(100.0 * count[65536] / n, 50, 1.5);
  EXPECT_NEAR(100.0 * count[32768] / n, 40, 1.5);
}

TEST(IoPatternTest, BlockalignWithoutRandomMap) {
  JobSpec spec;
  spec.rw = RwMode::kRandWrite;
  spec.bs = {4096, 4096, 4096};
  spec.blockalign = {0, 1 << 20, 0};
  spec.norandommap = true;
  IoPattern p(MakePatternConfig(spec, 512, 64 << 20, 13));
  std::set<uint64_t> seen;
  for (const IoUnit& u : Units(&p, 5000)) {
    ASSERT_EQ((u.offset - 512) % (1 << 20), 0u);
    seen.insert(u.offset);
  }
  EXPECT_EQ(seen.size(), 64u);  // every aligned position drawn
}

// Ranks of a centered (unscattered) distribution over n positions.
std::vector<uint64_t> Ranks(const std::string& text, DistKind kind, double param, double center,
                            uint64_t n, int draws) {
  Distribution d;
  d.kind = kind;
  d.param = param;
  d.center = center;
  d.text = text;
  RankSampler s(d, n, 42);
  std::vector<uint64_t> hits(n);
  for (int i = 0; i < draws; ++i) {
    const uint64_t r = s.Next();
    EXPECT_LT(r, n);
    ++hits[r];
  }
  return hits;
}

TEST(RankSamplerTest, ZipfMatchesItsProbabilities) {
  const uint64_t n = 1000;
  const double theta = 1.2;
  const int draws = 400000;
  const std::vector<uint64_t> hits = Ranks("zipf:1.2:0", DistKind::kZipf, theta, 0, n, draws);
  double h = 0;
  for (uint64_t k = 1; k <= n; ++k) h += std::pow(static_cast<double>(k), -theta);
  for (uint64_t k : {1u, 2u, 10u, 100u}) {
    const double expected = std::pow(static_cast<double>(k), -theta) / h;
    const double got = static_cast<double>(hits[k - 1]) / draws;
    EXPECT_NEAR(got, expected, expected * 0.05 + 0.0005) << "rank " << k;
  }
}

TEST(RankSamplerTest, ParetoFollowsFiosFormula) {
  // rank = (n-1) * u^(log h / log(1-h)): P(rank < x) = (x / (n-1))^(1/pow).
  const uint64_t n = 10000;
  const double h = 0.3;
  const int draws = 200000;
  const std::vector<uint64_t> hits = Ranks("pareto:0.3:0", DistKind::kPareto, h, 0, n, draws);
  const double pow = std::log(h) / std::log(1 - h);
  uint64_t below = 0;
  for (uint64_t r = 0; r < 100; ++r) below += hits[r];
  const double expected = std::pow(100.0 / (n - 1), 1 / pow);
  EXPECT_NEAR(static_cast<double>(below) / draws, expected, 0.01);
}

TEST(RankSamplerTest, NormalIsCenteredWithTheGivenDeviation) {
  const uint64_t n = 100000;
  const int draws = 100000;
  const std::vector<uint64_t> hits = Ranks("normal:5", DistKind::kNormal, 5, -1, n, draws);
  uint64_t within = 0;  // one deviation (5 % of the range) around the middle
  for (uint64_t r = n / 2 - n / 20; r < n / 2 + n / 20; ++r) within += hits[r];
  EXPECT_NEAR(static_cast<double>(within) / draws, 0.6827, 0.01);
}

TEST(RankSamplerTest, ScatteredZipfKeepsHotBlocksHot) {
  // Without a center the ranks are spread over the range by a bijection.
  const std::vector<uint64_t> hits = Ranks("zipf:1.2", DistKind::kZipf, 1.2, -1, 1000, 100000);
  uint64_t max = 0, at = 0;
  for (uint64_t i = 0; i < hits.size(); ++i) {
    if (hits[i] > max) {
      max = hits[i];
      at = i;
    }
  }
  EXPECT_GT(max, 100000u / 5);  // rank 1 has ~22 % of the draws
  EXPECT_NE(at, 0u);            // and sits somewhere else than position 0
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
