// Sparse logical-to-physical table for the FTL: a two-level radix table whose
// leaves (1024 entries = 4 MiB of LBA space at 4 KiB units, 4 KiB of memory)
// are allocated on first write. Memory: 8 bytes per 1024 entries of capacity
// for the top level, plus 4 KiB per 4 MiB-aligned region ever written.
// Thread-safety: none; owned by one Ftl.
#ifndef DEVMODEL_SRC_SPARSE_MAP_H_
#define DEVMODEL_SRC_SPARSE_MAP_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace devmodel::internal {

class SparseMap {
 public:
  static constexpr std::uint32_t kUnmapped = 0xFFFFFFFFu;
  static constexpr int kLeafShift = 10;
  static constexpr std::uint64_t kLeafSize = 1u << kLeafShift;

  explicit SparseMap(std::uint64_t size)
      : size_(size), top_((size + kLeafSize - 1) >> kLeafShift) {}

  // REQUIRES: index < size().
  std::uint32_t Get(std::uint64_t index) const {
    const std::uint32_t* leaf = top_[index >> kLeafShift].get();
    return leaf == nullptr ? kUnmapped : leaf[index & (kLeafSize - 1)];
  }

  // REQUIRES: index < size().
  void Set(std::uint64_t index, std::uint32_t value) {
    auto& leaf = top_[index >> kLeafShift];
    if (leaf == nullptr) {
      if (value == kUnmapped) return;
      leaf.reset(new std::uint32_t[kLeafSize]);
      std::memset(leaf.get(), 0xFF, kLeafSize * sizeof(std::uint32_t));
      ++leaves_;
    }
    leaf[index & (kLeafSize - 1)] = value;
  }

  std::uint64_t size() const { return size_; }
  std::uint64_t MemoryBytes() const {
    return top_.size() * sizeof(top_[0]) +
           leaves_ * kLeafSize * sizeof(std::uint32_t);
  }

 private:
  std::uint64_t size_;
  std::uint64_t leaves_ = 0;
  std::vector<std::unique_ptr<std::uint32_t[]>> top_;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_SPARSE_MAP_H_
