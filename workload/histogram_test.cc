#include "histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace blkgen {
namespace {

using H = LatencyHistogram;

// Checks the documented bound for one value.
void ExpectWithinBound(uint64_t v) {
  const int i = H::BucketOf(v);
  ASSERT_GE(i, 0);
  ASSERT_LT(i, H::kNumBuckets);
  const uint64_t lo = H::LowerBound(i);
  ASSERT_LE(lo, v) << v;
  ASSERT_LE(v - lo, H::Width(i) - 1) << v;
  const uint64_t rep = H::Representative(i);
  const double err = std::fabs(static_cast<double>(rep) - static_cast<double>(v));
  if (v == 0) {
    ASSERT_EQ(rep, 0u);
  } else {
    ASSERT_LE(err / static_cast<double>(v), H::kRelativeErrorBound) << v;
    ASSERT_LE(err / static_cast<double>(v), 1.0 / 128) << v;
  }
}

TEST(HistogramTest, BoundIsAtMostOneIn128) { EXPECT_LE(H::kRelativeErrorBound, 1.0 / 128); }

TEST(HistogramTest, ErrorBoundSweepSmallValues) {
  for (uint64_t v = 0; v < (1u << 20); ++v) ExpectWithinBound(v);
}

TEST(HistogramTest, ErrorBoundSweepEveryOctaveTo2Pow64) {
  std::mt19937_64 rng(1);
  for (int e = 20; e < 64; ++e) {
    const uint64_t base = 1ULL << e;
    // Edges of every bucket in the octave and random values inside it.
    for (uint64_t k = 0; k < H::kSubBuckets; ++k) {
      const uint64_t lo = base + k * (base >> H::kSubBucketBits);
      ExpectWithinBound(lo);
      ExpectWithinBound(lo + (base >> H::kSubBucketBits) - 1);
    }
    for (int n = 0; n < 2000; ++n) ExpectWithinBound(base + (rng() & (base - 1)));
  }
  ExpectWithinBound(~0ULL);
  ExpectWithinBound(1ULL << 40);  // the 2^40 ns the project asks for
}

TEST(HistogramTest, BucketsTileTheRange) {
  EXPECT_EQ(H::LowerBound(0), 0u);
  for (int i = 0; i + 1 < H::kNumBuckets; ++i) {
    ASSERT_EQ(H::LowerBound(i) + H::Width(i), H::LowerBound(i + 1)) << i;
    ASSERT_EQ(H::BucketOf(H::LowerBound(i)), i);
  }
  const int last = H::kNumBuckets - 1;
  EXPECT_EQ(H::LowerBound(last) + (H::Width(last) - 1), ~0ULL);
}

// Exact percentile with fio's rule: the smallest value v such that at least
// p% of the values are <= v.
uint64_t ExactPercentile(std::vector<uint64_t> sorted, double p) {
  const long double threshold = static_cast<long double>(p) / 100.0L * sorted.size();
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (static_cast<long double>(i + 1) >= threshold) return sorted[i];
  }
  return sorted.back();
}

const std::vector<double> kFioPercentiles = {1,  5,  10, 20, 30,   40,   50,    60,   70,
                                             80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};

TEST(HistogramTest, PercentilesExactForSmallValues) {
  H h;
  std::vector<uint64_t> values;
  for (uint64_t v = 1; v <= 200; ++v) {
    for (uint64_t k = 0; k < v % 7 + 1; ++k) {
      values.push_back(v);
      h.Add(v);
    }
  }
  std::sort(values.begin(), values.end());
  const std::vector<uint64_t> got = h.Percentiles(kFioPercentiles, values.front(), values.back());
  for (size_t i = 0; i < kFioPercentiles.size(); ++i) {
    EXPECT_EQ(got[i], ExactPercentile(values, kFioPercentiles[i])) << kFioPercentiles[i];
  }
}

TEST(HistogramTest, PercentilesKnownData) {
  // 1..1000 us: p-th percentile is p * 10 us exactly.
  H h;
  std::vector<uint64_t> values;
  for (uint64_t i = 1; i <= 1000; ++i) {
    values.push_back(i * 1000);
    h.Add(i * 1000);
  }
  const std::vector<double> ps = {1, 50, 90, 99, 99.9};
  const std::vector<uint64_t> got = h.Percentiles(ps, 1000, 1000000);
  const uint64_t want[] = {10000, 500000, 900000, 990000, 999000};
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(got[i]), static_cast<double>(want[i]),
                want[i] * H::kRelativeErrorBound)
        << ps[i];
  }
}

TEST(HistogramTest, PercentilesRandomDataWithinBound) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(80000.0), 1.2);  // ~80 us median
  H h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 200000; ++i) {
    const uint64_t v = static_cast<uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.Add(v);
  }
  std::sort(values.begin(), values.end());
  const std::vector<uint64_t> got = h.Percentiles(kFioPercentiles, values.front(), values.back());
  for (size_t i = 0; i < kFioPercentiles.size(); ++i) {
    const double exact = static_cast<double>(ExactPercentile(values, kFioPercentiles[i]));
    EXPECT_LE(std::fabs(static_cast<double>(got[i]) - exact) / exact, H::kRelativeErrorBound)
        << kFioPercentiles[i];
  }
}

TEST(HistogramTest, PercentilesClampToObservedExtremes) {
  H h;
  h.Add(1000003);  // bucket midpoint differs from the value
  const std::vector<uint64_t> got = h.Percentiles(kFioPercentiles, 1000003, 1000003);
  for (uint64_t v : got) EXPECT_EQ(v, 1000003u);
}

TEST(HistogramTest, EmptyGivesZeros) {
  H h;
  EXPECT_EQ(h.Count(), 0u);
  for (uint64_t v : h.Percentiles(kFioPercentiles, 0, 0)) EXPECT_EQ(v, 0u);
}

TEST(HistogramTest, MergeAddsCounts) {
  H a, b;
  a.Add(5);
  b.Add(5);
  b.Add(1 << 30);
  a.Merge(b);
  EXPECT_EQ(a.Count(), 3u);
  EXPECT_EQ(a.CountAt(H::BucketOf(5)), 2u);
}

}  // namespace
}  // namespace blkgen
