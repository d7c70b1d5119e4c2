// MonotonicNs: the one clock blkgen reads while running I/O. In the guest
// under icount this is virtual time, so it is deterministic there.
// Thread-safety: safe.
#ifndef BLKGEN_CLOCK_H_
#define BLKGEN_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace blkgen {

// CLOCK_MONOTONIC in nanoseconds (through the vDSO where the kernel has one).
inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace blkgen

#endif  // BLKGEN_CLOCK_H_
