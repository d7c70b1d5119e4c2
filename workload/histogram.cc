#include "histogram.h"

#include <algorithm>

namespace blkgen {

static_assert(LatencyHistogram::BucketOf(~0ULL) == LatencyHistogram::kNumBuckets - 1);
static_assert(LatencyHistogram::kRelativeErrorBound <= 1.0 / 128);

uint64_t LatencyHistogram::Count() const {
  uint64_t n = 0;
  for (uint64_t c : counts_) n += c;
  return n;
}

std::vector<uint64_t> LatencyHistogram::Percentiles(std::span<const double> percentiles,
                                                    uint64_t min_ns, uint64_t max_ns) const {
  std::vector<uint64_t> values(percentiles.size(), 0);
  const uint64_t total = Count();
  if (total == 0) return values;
  size_t j = 0;
  uint64_t cumulative = 0;
  for (int i = 0; i < kNumBuckets && j < percentiles.size(); ++i) {
    if (counts_[i] == 0) continue;
    cumulative += counts_[i];
    while (j < percentiles.size() &&
           static_cast<long double>(cumulative) >=
               static_cast<long double>(percentiles[j]) / 100.0L * total) {
      values[j] = std::clamp(Representative(i), min_ns, max_ns);
      ++j;
    }
  }
  return values;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kNumBuckets; ++i) counts_[i] += other.counts_[i];
}

}  // namespace blkgen
