// RunningStat: count, min, max, mean and sample standard deviation of a
// stream of unsigned integers (nanoseconds, KiB/s, IOPS), exact: the sum and
// sum of squares are kept as integers (the square sum in 128 bits), so
// results do not depend on the order of Add() calls.
// Thread-safety: none; one writer. Trivially copyable (see JobResult).
#ifndef BLKGEN_RUNNING_STAT_H_
#define BLKGEN_RUNNING_STAT_H_

#include <cmath>
#include <cstdint>

namespace blkgen {

struct RunningStat {
  uint64_t n = 0;
  uint64_t min = 0;  // valid when n > 0
  uint64_t max = 0;
  uint64_t sum = 0;  // wraps after 2^64 (584 years of nanoseconds)
  unsigned __int128 sum_sq = 0;

  void Add(uint64_t v) {
    if (n == 0 || v < min) min = v;
    if (v > max) max = v;
    ++n;
    sum += v;
    sum_sq += static_cast<unsigned __int128>(v) * v;
  }

  // Adds all values of `o`, as if they had been Add()ed here.
  void Merge(const RunningStat& o) {
    if (o.n == 0) return;
    if (n == 0 || o.min < min) min = o.min;
    if (o.max > max) max = o.max;
    n += o.n;
    sum += o.sum;
    sum_sq += o.sum_sq;
  }

  double Mean() const { return n == 0 ? 0.0 : static_cast<double>(sum) / n; }

  // Sample standard deviation (divides by n - 1, as fio does); 0 if n < 2.
  double Stddev() const {
    if (n < 2) return 0.0;
    const long double mean = static_cast<long double>(sum) / n;
    long double var = (static_cast<long double>(sum_sq) - mean * sum) / (n - 1);
    if (var < 0) var = 0;  // rounding when all values are equal
    return static_cast<double>(std::sqrt(var));
  }
};

}  // namespace blkgen

#endif  // BLKGEN_RUNNING_STAT_H_
