#include "io_pattern.h"

#include <algorithm>
#include <cmath>

namespace blkgen {
namespace {

// Mixer of SplitMix64's output step: a bijection on 64 bits.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform integer in [0, n) from 64 random bits (Lemire's multiply-shift).
inline uint64_t Below(uint64_t r, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * n) >> 64);
}

// Stream keys within one pattern (xor-ed into the pattern's seed).
constexpr uint64_t kDirStream = 0x6469725f73747265ULL;   // "dir_stre"
constexpr uint64_t kSizeStream = 0x73697a655f737472ULL;  // "size_str"
constexpr uint64_t kRankStream = 0x72616e6b5f737472ULL;  // "rank_str"

// Hoermann-Derflinger helpers: log1p(x)/x and expm1(x)/x, stable near 0.
double Helper1(double x) {
  return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}
double Helper2(double x) {
  return std::fabs(x) > 1e-8 ? std::expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

}  // namespace

uint64_t SplitMix64(uint64_t* state) {
  *state += 0x9e3779b97f4a7c15ULL;
  return Mix64(*state);
}

uint64_t DeriveSeed(uint64_t randseed, uint32_t job_index, uint32_t stream) {
  uint64_t state = randseed;
  uint64_t a = SplitMix64(&state);
  state = a ^ (static_cast<uint64_t>(job_index) << 32 | stream);
  return SplitMix64(&state);
}

RandomPermutation::RandomPermutation(uint64_t n, uint64_t key) : n_(n) {
  // Smallest even bit count whose domain holds n (so the domain is < 4n).
  int bits = 0;
  while (bits < 64 && (n - 1) >> bits != 0) ++bits;
  half_bits_ = (bits + 1) / 2;
  if (half_bits_ == 0) half_bits_ = 1;
  half_mask_ = (1ULL << half_bits_) - 1;
  uint64_t state = key;
  for (uint64_t& k : round_keys_) k = SplitMix64(&state);
}

uint64_t RandomPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t k : round_keys_) {
    const uint64_t next = left ^ (Mix64(right ^ k) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t RandomPermutation::At(uint64_t i) const {
  // Cycle walking: the cycle through i holds i itself, so this ends; the
  // domain is < 4n, so on average fewer than 4 steps.
  uint64_t x = Encrypt(i);
  while (x >= n_) x = Encrypt(x);
  return x;
}

RankSampler::RankSampler(const Distribution& dist, uint64_t n, uint64_t seed)
    : dist_(dist), n_(n), state_(seed), scatter_perm_(n, seed ^ 0x5ca77e5ULL) {
  const bool centered = dist.center >= 0;
  scatter_ = !centered && (dist.kind == DistKind::kZipf || dist.kind == DistKind::kPareto);
  const double center = centered ? dist.center : 0.5;
  center_offset_ =
      std::min<uint64_t>(n - 1, static_cast<uint64_t>(center * static_cast<double>(n)));
  if (dist.kind == DistKind::kZipf) {
    s_ = dist.param;
    auto h_integral = [this](double x) {
      const double log_x = std::log(x);
      return Helper2((1 - s_) * log_x) * log_x;
    };
    h_integral_x1_ = h_integral(1.5) - 1;
    h_integral_n_ = h_integral(static_cast<double>(n) + 0.5);
  } else if (dist.kind == DistKind::kPareto) {
    pareto_pow_ = std::log(dist.param) / std::log(1 - dist.param);
  }
}

double RankSampler::Uniform01() {
  return static_cast<double>(SplitMix64(&state_) >> 11) * 0x1.0p-53;
}

uint64_t RankSampler::Zipf() {
  auto h = [this](double x) { return std::exp(-s_ * std::log(x)); };
  auto h_integral = [this](double x) {
    const double log_x = std::log(x);
    return Helper2((1 - s_) * log_x) * log_x;
  };
  auto h_integral_inverse = [this](double x) {
    double t = x * (1 - s_);
    if (t < -1) t = -1;
    return std::exp(Helper1(t) * x);
  };
  const double s_div = 2 - h_integral_inverse(h_integral(2.5) - h(2));
  const double n = static_cast<double>(n_);
  while (true) {
    const double u = h_integral_n_ + Uniform01() * (h_integral_x1_ - h_integral_n_);
    const double x = h_integral_inverse(u);
    double k = std::floor(x + 0.5);
    if (k < 1) k = 1;
    if (k > n) k = n;
    if (k - x <= s_div || u >= h_integral(k + 0.5) - h(k)) return static_cast<uint64_t>(k) - 1;
  }
}

uint64_t RankSampler::Next() {
  uint64_t rank = 0;
  switch (dist_.kind) {
    case DistKind::kRandom:
      return Below(SplitMix64(&state_), n_);
    case DistKind::kZipf:
      rank = Zipf();
      break;
    case DistKind::kPareto:
      rank =
          static_cast<uint64_t>(static_cast<double>(n_ - 1) * std::pow(Uniform01(), pareto_pow_));
      break;
    case DistKind::kNormal: {
      // Box-Muller; the deviation is a share of the range.
      const double u1 = 1.0 - Uniform01();  // (0, 1]
      const double u2 = Uniform01();
      const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      const double sd = dist_.param / 100.0 * static_cast<double>(n_);
      const double n = static_cast<double>(n_);
      double pos = std::floor(static_cast<double>(center_offset_) + 0.5 + sd * z);
      pos = std::fmod(pos, n);
      if (pos < 0) pos += n;
      return std::min<uint64_t>(n_ - 1, static_cast<uint64_t>(pos));
    }
  }
  if (rank >= n_) rank = n_ - 1;
  if (scatter_) return scatter_perm_.At(rank);
  return (rank + center_offset_) % n_;
}

PatternConfig MakePatternConfig(const JobSpec& spec, uint64_t region_offset, uint64_t region_bytes,
                                uint64_t seed) {
  PatternConfig c;
  c.mode = spec.rw;
  c.rwmixread = spec.rwmixread;
  c.region_offset = region_offset;
  c.region_bytes = region_bytes;
  for (int d = 0; d < kNumDirs; ++d) {
    if (!spec.bssplit[d].empty()) {
      c.sizes[d] = spec.bssplit[d];
    } else {
      c.sizes[d] = {BsSplitEntry{spec.bs[d], 100}};
    }
    c.align[d] = spec.Alignment(static_cast<Dir>(d));
  }
  c.random_map = !spec.norandommap;
  c.distribution = spec.distribution;
  c.seed = seed;
  return c;
}

IoPattern::IoPattern(const PatternConfig& config)
    : config_(config),
      random_(InfoFor(config.mode).random),
      dirs_(InfoFor(config.mode).dir_mask),
      region_end_(config.region_offset + config.region_bytes),
      dir_state_(config.seed ^ kDirStream),
      size_state_(config.seed ^ kSizeStream),
      permutation_(1, 0) {
  for (int d = 0; d < kNumDirs; ++d) cursor_[d] = config_.region_offset;
  if (!random_) return;
  if (config_.random_map) {
    slot_bytes_ = 0;
    for (int d = 0; d < kNumDirs; ++d) {
      if ((dirs_ & DirBit(static_cast<Dir>(d))) == 0) continue;
      for (const BsSplitEntry& e : config_.sizes[d]) {
        slot_bytes_ = slot_bytes_ == 0 ? e.bytes : std::min(slot_bytes_, e.bytes);
      }
    }
    blocks_ = config_.region_bytes / slot_bytes_;
    permutation_ = RandomPermutation(blocks_, config_.seed);
    return;
  }
  for (int d = 0; d < kNumDirs; ++d) {
    if ((dirs_ & DirBit(static_cast<Dir>(d))) == 0) continue;
    uint64_t min_size = config_.sizes[d][0].bytes;
    for (const BsSplitEntry& e : config_.sizes[d]) min_size = std::min(min_size, e.bytes);
    const uint64_t positions = (config_.region_bytes - min_size) / config_.align[d] + 1;
    sampler_of_[d] = static_cast<int>(samplers_.size());
    samplers_.emplace_back(config_.distribution, positions,
                           config_.seed ^ kRankStream ^ static_cast<uint64_t>(d));
  }
}

void IoPattern::StartPass() {
  ++pass_;
  index_ = 0;
  uint64_t state = config_.seed ^ pass_;
  permutation_ = RandomPermutation(blocks_, SplitMix64(&state));
}

Dir IoPattern::NextDir() {
  const bool reads = dirs_ & DirBit(Dir::kRead);
  const bool writes = dirs_ & DirBit(Dir::kWrite);
  if (reads && writes) {
    return Below(SplitMix64(&dir_state_), 100) < config_.rwmixread ? Dir::kRead : Dir::kWrite;
  }
  if (writes) return Dir::kWrite;
  if (dirs_ & DirBit(Dir::kTrim)) return Dir::kTrim;
  return Dir::kRead;
}

uint32_t IoPattern::NextSize(Dir d) {
  const std::vector<BsSplitEntry>& sizes = config_.sizes[static_cast<int>(d)];
  if (sizes.size() == 1) return static_cast<uint32_t>(sizes[0].bytes);
  const uint64_t r = Below(SplitMix64(&size_state_), 100);
  uint64_t cumulative = 0;
  for (const BsSplitEntry& e : sizes) {
    cumulative += e.percent;
    if (r < cumulative) return static_cast<uint32_t>(e.bytes);
  }
  return static_cast<uint32_t>(sizes.back().bytes);
}

// fio's rule: the drawn size, or else the largest listed size that fits.
uint64_t IoPattern::FitSize(Dir d, uint64_t offset, uint64_t size) const {
  if (offset + size <= region_end_) return size;
  uint64_t best = 0;
  for (const BsSplitEntry& e : config_.sizes[static_cast<int>(d)]) {
    if (offset + e.bytes <= region_end_) best = std::max(best, e.bytes);
  }
  return best;  // 0: nothing fits at this offset
}

void IoPattern::Next(IoUnit* unit) {
  const Dir d = NextDir();
  const int di = static_cast<int>(d);
  uint64_t size = NextSize(d);
  uint64_t offset;
  if (!random_) {
    offset = cursor_[di];
    uint64_t fit = FitSize(d, offset, size);
    if (fit == 0) {  // at the end: wrap
      offset = config_.region_offset;
      fit = size;
    }
    size = fit;
    cursor_[di] = offset + size;
  } else {
    uint64_t align;
    if (config_.random_map) {
      if (index_ == blocks_) StartPass();
      const uint64_t slot = permutation_.At(index_++);
      offset = config_.region_offset + slot * slot_bytes_;
      align = slot_bytes_;
    } else {
      align = config_.align[di];
      offset = config_.region_offset + samplers_[sampler_of_[di]].Next() * align;
    }
    const uint64_t fit = FitSize(d, offset, size);
    if (fit == 0) {
      // Move back to the last aligned position where the drawn size fits.
      offset = config_.region_offset + (config_.region_bytes - size) / align * align;
    } else {
      size = fit;
    }
  }
  unit->dir = d;
  unit->offset = offset;
  unit->length = static_cast<uint32_t>(size);
}

}  // namespace blkgen
