// IoPattern: the sequence of I/Os of a job (direction, offset, length), a
// pure function of the job's options, its seed and its position in the job
// list; it never looks at the engine, the clock or completions, so the
// sequence is the same across runs and engines.
//
// Sequential modes walk the region block by block. Random modes visit every
// block of the region exactly once per pass in an order given by a keyed
// permutation (a 4-round Feistel network over the next power of four, with
// cycle walking), which is what fio's default random map guarantees, in O(1)
// memory; each pass uses a new key. The order is not fio's.
// Thread-safety: none; one job.
#ifndef BLKGEN_IO_PATTERN_H_
#define BLKGEN_IO_PATTERN_H_

#include <array>
#include <cstdint>

#include "job_spec.h"

namespace blkgen {

// SplitMix64 step (Steele, Lea, Flood 2014): advances *state, returns 64 bits.
uint64_t SplitMix64(uint64_t* state);

// Seed of stream `stream` of the job at `job_index` for user seed `randseed`.
uint64_t DeriveSeed(uint64_t randseed, uint32_t job_index, uint32_t stream);

// A keyed bijection on [0, n).
class RandomPermutation {
 public:
  // REQUIRES: n >= 1.
  RandomPermutation(uint64_t n, uint64_t key);
  // The image of i. REQUIRES: i < n.
  uint64_t At(uint64_t i) const;

 private:
  uint64_t Encrypt(uint64_t x) const;

  uint64_t n_;
  int half_bits_;
  uint64_t half_mask_;
  std::array<uint64_t, 4> round_keys_;
};

struct IoUnit {
  Dir dir;
  uint64_t offset;  // bytes
  uint32_t length;  // bytes
};

class IoPattern {
 public:
  // The region is [region_offset, region_offset + region_bytes), split into
  // region_bytes / block_bytes blocks (a tail shorter than a block is not
  // used, as in fio). With `repeat`, passes continue forever (time_based).
  // REQUIRES: mode supported and single-direction; block_bytes > 0;
  // region_bytes >= block_bytes; block_bytes < 2^32.
  IoPattern(RwMode mode, uint64_t region_offset, uint64_t region_bytes, uint64_t block_bytes,
            uint64_t seed, bool repeat);

  // Writes the next I/O to *unit; false once a pass ended and !repeat.
  bool Next(IoUnit* unit);

  uint64_t blocks() const { return blocks_; }

 private:
  void StartPass();

  Dir dir_;
  bool random_;
  bool repeat_;
  uint64_t region_offset_;
  uint64_t block_bytes_;
  uint64_t blocks_;
  uint64_t seed_;
  uint64_t pass_ = 0;
  uint64_t index_ = 0;  // next block number within the pass
  RandomPermutation permutation_;
};

}  // namespace blkgen

#endif  // BLKGEN_IO_PATTERN_H_
