// A 64-bit checksum of whole words, four independent lanes (fast over a
// gigabyte), then mixed: what state files (state_cache.h, a saved model
// state) carry to catch truncation and corruption, not tampering.
// Thread-safety: none (one per computation).
#ifndef DEVMODEL_SRC_CHECKSUM_H_
#define DEVMODEL_SRC_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace devmodel::internal {

class Checksum {
 public:
  // REQUIRES: bytes % 8 == 0 (every section is padded to words).
  void Add(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t words = bytes / 8;
    for (; words > 0; --words, p += 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      std::uint64_t& h = lane_[index_++ & 3];
      h = (h ^ w) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    }
  }
  std::uint64_t Value() const {
    std::uint64_t v = index_;
    for (std::uint64_t h : lane_) v = Mix(v ^ h);
    return v;
  }

 private:
  static std::uint64_t Mix(std::uint64_t v) {
    v ^= v >> 33;
    v *= 0xFF51AFD7ED558CCDull;
    v ^= v >> 33;
    v *= 0xC4CEB9FE1A85EC53ull;
    return v ^ (v >> 33);
  }
  std::uint64_t lane_[4] = {1, 2, 3, 4};
  std::uint64_t index_ = 0;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_CHECKSUM_H_
