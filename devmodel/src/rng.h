// Seeded pseudo-random generator owned by the models: xoshiro256** seeded via
// SplitMix64 (Blackman & Vigna, https://prng.di.unimi.it/). Used instead of
// std:: distributions, whose output differs across standard libraries, so the
// same seed gives the same completions everywhere. Not thread-safe.
#ifndef DEVMODEL_SRC_RNG_H_
#define DEVMODEL_SRC_RNG_H_

#include <cstdint>

namespace devmodel::internal {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& word : s_) word = SplitMix64(&seed);
  }

  std::uint64_t Next() {
    const std::uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n) by Lemire's multiply-shift (bias < n / 2^64).
  // REQUIRES: n > 0.
  std::uint64_t Below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

  // Uniform in [0, 1) with 53 bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Exponential with the given mean; uses DeterministicLog, not libm.
  double Exponential(double mean) { return -mean * DeterministicLog(1.0 - Uniform()); }

  // The generator's four words, for a saved model state (model_state.h).
  void SaveWords(std::uint64_t out[4]) const {
    for (int i = 0; i < 4; ++i) out[i] = s_[i];
  }
  void LoadWords(const std::uint64_t in[4]) {
    for (int i = 0; i < 4; ++i) s_[i] = in[i];
  }
  // Natural log built from + - * / only (IEEE-exact operations), so results
  // do not depend on the libm version. |error| < 1e-12 relative for x > 0.
  static double DeterministicLog(double x) {
    if (x <= 0) return -745.0;  // ~ log of the smallest subnormal
    int exponent = 0;
    while (x >= 2.0) {
      x *= 0.5;
      ++exponent;
    }
    while (x < 1.0) {
      x *= 2.0;
      --exponent;
    }
    // x in [1, 2): log(x) = 2 atanh((x-1)/(x+1)), |z| <= 1/3.
    const double z = (x - 1.0) / (x + 1.0);
    const double z2 = z * z;
    double term = z, sum = 0.0;
    for (int k = 1; k < 60; k += 2) {
      sum += term / k;
      term *= z2;
    }
    return 2.0 * sum + exponent * 0.69314718055994530942;
  }

 private:
  static std::uint64_t Rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t SplitMix64(std::uint64_t* state) {
    std::uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t s_[4];
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_RNG_H_
