// IoPattern: the sequence of I/Os of a job (direction, offset, length), a
// pure function of the job's options and its seed; it never looks at the
// engine, the clock or completions, so the sequence is the same across runs
// and engines. The caller decides when the sequence ends (bytes or time).
//
// - Direction: the mode's only direction, or for rw/randrw a draw per I/O
//   (rwmixread % reads) from its own random stream.
// - Length: the direction's bs, or a draw from its bssplit weights (own
//   stream). fio's rule for sizes that do not fit before the region's end:
//   the largest listed size that fits is used.
// - Offset, sequential: each direction walks the region from its start with
//   its own cursor (as fio) and wraps at the end.
// - Offset, random with the random map (fio's default): the region is cut
//   into slots of the smallest block size of the job's directions; every slot
//   is visited exactly once per pass, in an order given by a keyed
//   permutation (a 4-round Feistel network over the next power of four, with
//   cycle walking) in O(1) memory; each pass uses a new key. An I/O that would
//   run past the region's end is moved back to the last aligned position
//   where it fits.
// - Offset, random without the map (norandommap, blockalign differing from
//   bs, or a non-uniform random_distribution, as fio): a draw per I/O over the
//   direction's aligned positions, from the distribution: uniform; zipf(theta)
//   (exact, rejection-inversion of Hoermann and Derflinger); pareto(h) (fio's
//   formula, rank = (n-1) * u^(log h / log(1-h))); normal (deviation in % of
//   the range). zipf and pareto ranks are scattered over the region by a keyed
//   permutation unless a center is given, in which case rank 0 sits at
//   center * range and ranks follow it (wrapping); normal is centered at
//   `center` (default 0.5) and not scattered.
// The order is blkgen's own, not fio's.
// Thread-safety: none; one job.
#ifndef BLKGEN_IO_PATTERN_H_
#define BLKGEN_IO_PATTERN_H_

#include <array>
#include <cstdint>
#include <vector>

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

// Draws ranks in [0, n) from one of the random_distribution models.
class RankSampler {
 public:
  // REQUIRES: n >= 1; parameters validated by the option parser.
  RankSampler(const Distribution& dist, uint64_t n, uint64_t seed);
  uint64_t Next();

 private:
  double Uniform01();  // [0, 1)
  uint64_t Zipf();     // rank in [0, n)

  Distribution dist_;
  uint64_t n_;
  uint64_t state_;
  // zipf (rejection-inversion)
  double h_integral_x1_ = 0, h_integral_n_ = 0, s_ = 0;
  double pareto_pow_ = 0;
  bool scatter_ = false;
  uint64_t center_offset_ = 0;
  RandomPermutation scatter_perm_;
};

struct IoUnit {
  Dir dir;
  uint64_t offset;  // bytes
  uint32_t length;  // bytes
};

struct PatternConfig {
  RwMode mode = RwMode::kRead;
  uint32_t rwmixread = 50;  // %
  uint64_t region_offset = 0;
  uint64_t region_bytes = 0;
  // Per direction: sizes and weights; for a fixed bs one entry of 100 %.
  std::array<std::vector<BsSplitEntry>, kNumDirs> sizes;
  std::array<uint64_t, kNumDirs> align{};  // random offsets are multiples of this
  bool random_map = true;
  Distribution distribution;
  uint64_t seed = 0;
};

// The pattern's settings for `spec` over the given region.
PatternConfig MakePatternConfig(const JobSpec& spec, uint64_t region_offset, uint64_t region_bytes,
                                uint64_t seed);

class IoPattern {
 public:
  // REQUIRES: region_bytes >= the largest size of every direction used,
  // sizes non-empty for them, all sizes and alignments > 0 and < 2^32.
  explicit IoPattern(const PatternConfig& config);

  // Writes the next I/O to *unit. The sequence never ends.
  void Next(IoUnit* unit);

  // Slots of the random map (random_map only): region / slot size.
  uint64_t blocks() const { return blocks_; }

 private:
  Dir NextDir();
  uint32_t NextSize(Dir d);
  uint64_t FitSize(Dir d, uint64_t offset, uint64_t size) const;
  void StartPass();

  PatternConfig config_;
  bool random_;
  uint8_t dirs_;
  uint64_t region_end_;
  uint64_t dir_state_, size_state_;
  // sequential
  std::array<uint64_t, kNumDirs> cursor_{};
  // random map
  uint64_t slot_bytes_ = 0;
  uint64_t blocks_ = 0;
  uint64_t pass_ = 0;
  uint64_t index_ = 0;
  RandomPermutation permutation_;
  // no random map: one sampler per direction over its aligned positions
  std::vector<RankSampler> samplers_;
  std::array<int, kNumDirs> sampler_of_{-1, -1, -1};
};

}  // namespace blkgen

#endif  // BLKGEN_IO_PATTERN_H_
