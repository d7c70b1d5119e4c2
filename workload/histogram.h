// LatencyHistogram: log-linear histogram of nanosecond values, as fio's
// clat histogram, used for percentiles and the full-histogram output.
//
// Error bound: values below 256 ns are counted exactly. Above, each power of
// two [2^e, 2^(e+1)) is split into 128 equal buckets, so a bucket [lo, lo+w)
// has w <= lo/128, and the value reported for it (its midpoint, see
// Representative()) is within w/2 <= lo/256 of any value in it: the relative
// error of a reported value is at most 1/256, within the 1/128 blklab
// requires. Covers the whole uint64_t range (2^64 ns), no clamping.
//
// Memory: 7424 counters of 8 bytes (58 KiB). Add() is a few instructions
// (one count-leading-zeros, shift, add) and never allocates.
// Thread-safety: none; one writer. The type is trivially copyable, so a job
// can fill one in shared memory and the parent read it after the job ends.
#ifndef BLKGEN_HISTOGRAM_H_
#define BLKGEN_HISTOGRAM_H_

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace blkgen {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = 1ULL << kSubBucketBits;  // per power of two
  static constexpr int kNumBuckets = (64 - kSubBucketBits) * kSubBuckets + kSubBuckets;
  // Largest relative error of Representative() for any value: 1/256.
  static constexpr double kRelativeErrorBound = 1.0 / (2 * kSubBuckets);

  // Index of the bucket holding `ns`.
  static constexpr int BucketOf(uint64_t ns) {
    // e = floor(log2(ns)), at least kSubBucketBits so small values map 1:1.
    const int e = 63 - __builtin_clzll(ns | kSubBuckets);
    const int shift = e - kSubBucketBits;
    return static_cast<int>((static_cast<uint64_t>(shift) << kSubBucketBits) + (ns >> shift));
  }
  // Smallest value in bucket `i`. REQUIRES: 0 <= i < kNumBuckets.
  static constexpr uint64_t LowerBound(int i) {
    if (i < static_cast<int>(2 * kSubBuckets)) return static_cast<uint64_t>(i);
    const int shift = i / static_cast<int>(kSubBuckets) - 1;
    return (static_cast<uint64_t>(i) % kSubBuckets + kSubBuckets) << shift;
  }
  // Number of values in bucket `i` (1 below 256, then doubling per octave).
  static constexpr uint64_t Width(int i) {
    if (i < static_cast<int>(2 * kSubBuckets)) return 1;
    return 1ULL << (i / static_cast<int>(kSubBuckets) - 1);
  }
  // The value reported for bucket `i`: its midpoint, rounded down.
  static constexpr uint64_t Representative(int i) { return LowerBound(i) + (Width(i) - 1) / 2; }

  void Add(uint64_t ns) { ++counts_[BucketOf(ns)]; }
  void Clear() { counts_.fill(0); }

  uint64_t Count() const;
  uint64_t CountAt(int i) const { return counts_[i]; }

  // Values at the given percentiles (each in [0, 100]), fio's method: the
  // first bucket whose cumulative count reaches p/100 * Count(), reported as
  // its Representative() clamped to [min_ns, max_ns] (the exact extremes
  // of the recorded values, which the clamp can only bring closer).
  // Returns zeros when empty. REQUIRES: `percentiles` ascending.
  std::vector<uint64_t> Percentiles(std::span<const double> percentiles, uint64_t min_ns,
                                    uint64_t max_ns) const;

  // Adds all counts of `other`.
  void Merge(const LatencyHistogram& other);

 private:
  std::array<uint64_t, kNumBuckets> counts_{};
};

}  // namespace blkgen

#endif  // BLKGEN_HISTOGRAM_H_
