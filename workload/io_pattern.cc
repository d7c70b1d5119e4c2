#include "io_pattern.h"

namespace blkgen {
namespace {

// Mixer of SplitMix64's output step: a bijection on 64 bits.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Dir SingleDirection(RwMode mode) {
  const uint8_t mask = InfoFor(mode).dir_mask;
  if (mask & DirBit(Dir::kWrite)) return Dir::kWrite;
  if (mask & DirBit(Dir::kTrim)) return Dir::kTrim;
  return Dir::kRead;
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

IoPattern::IoPattern(RwMode mode, uint64_t region_offset, uint64_t region_bytes,
                     uint64_t block_bytes, uint64_t seed, bool repeat)
    : dir_(SingleDirection(mode)),
      random_(InfoFor(mode).random),
      repeat_(repeat),
      region_offset_(region_offset),
      block_bytes_(block_bytes),
      blocks_(region_bytes / block_bytes),
      seed_(seed),
      permutation_(blocks_, seed) {}

void IoPattern::StartPass() {
  ++pass_;
  index_ = 0;
  if (random_) {
    uint64_t state = seed_ ^ pass_;
    permutation_ = RandomPermutation(blocks_, SplitMix64(&state));
  }
}

bool IoPattern::Next(IoUnit* unit) {
  if (index_ == blocks_) {
    if (!repeat_) return false;
    StartPass();
  }
  const uint64_t block = random_ ? permutation_.At(index_) : index_;
  ++index_;
  unit->dir = dir_;
  unit->offset = region_offset_ + block * block_bytes_;
  unit->length = static_cast<uint32_t>(block_bytes_);
  return true;
}

}  // namespace blkgen
