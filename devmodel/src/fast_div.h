// Division of 32-bit values by a divisor fixed at run time, with one multiply
// instead of a divide instruction (the FTL divides slot numbers by geometry
// figures on every request). Exact for every 32-bit dividend and divisor:
// n / d == high64(M * n) with M = floor(2^64 / d) + 1 (Lemire, Kaser, Kurz,
// "Faster remainder by direct computation", Software: Practice and
// Experience, 2019). Thread-safety: immutable after construction.
#ifndef DEVMODEL_SRC_FAST_DIV_H_
#define DEVMODEL_SRC_FAST_DIV_H_

#include <cstdint>

namespace devmodel::internal {

class FastDivU32 {
 public:
  // REQUIRES: divisor >= 1.
  explicit FastDivU32(std::uint32_t divisor = 1)
      : divisor_(divisor), magic_(divisor == 1 ? 0 : ~std::uint64_t{0} / divisor + 1) {}

  std::uint32_t Div(std::uint32_t n) const {
    if (magic_ == 0) return n;  // divisor 1: the magic would need 65 bits
    return static_cast<std::uint32_t>((static_cast<unsigned __int128>(magic_) * n) >> 64);
  }
  std::uint32_t Mod(std::uint32_t n) const { return n - Div(n) * divisor_; }
  std::uint32_t divisor() const { return divisor_; }

 private:
  std::uint32_t divisor_;
  std::uint64_t magic_;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_FAST_DIV_H_
