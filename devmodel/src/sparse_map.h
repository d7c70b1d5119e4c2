// Sparse logical-to-physical table for the FTL. The index space is cut into
// regions of 4096 entries (16 MiB of LBA space at 4 KiB units). A region is
// empty (8 bytes), sparse (a small open-addressing hash of its mapped entries,
// 8 bytes per slot at load <= 1/2, plus an 8-byte header) or dense (a 16 KiB
// array from a huge-page pool). A sparse region turns dense when it would hold
// more than 512 entries, so memory is at most ~32 bytes per mapped entry plus
// 8 bytes per region of capacity, whether writes are sequential or scattered.
// A dense lookup is one load from the region table and one from the array.
// A map can also start implicit (SetAllImplicit): every entry given by a
// function until its region is first written, when the region turns dense;
// a drive filled in order needs no table until it is overwritten.
// Thread-safety: none; owned by one Ftl.
#ifndef DEVMODEL_SRC_SPARSE_MAP_H_
#define DEVMODEL_SRC_SPARSE_MAP_H_

#include <cstdint>
#include <vector>

#include "item_pool.h"

namespace devmodel::internal {

// The entries of an implicit map's regions until they are written.
class ImplicitEntries {
 public:
  virtual ~ImplicitEntries() = default;
  // REQUIRES: index < the map's size.
  virtual std::uint32_t At(std::uint64_t index) const = 0;
};

class SparseMap {
 public:
  static constexpr std::uint32_t kUnmapped = 0xFFFFFFFFu;
  static constexpr int kRegionShift = 12;
  static constexpr std::uint64_t kRegionSize = std::uint64_t{1} << kRegionShift;
  static constexpr std::uint32_t kDenseThreshold = kRegionSize / 8;

  explicit SparseMap(std::uint64_t size);
  ~SparseMap();
  SparseMap(const SparseMap&) = delete;
  SparseMap& operator=(const SparseMap&) = delete;

  // REQUIRES: index < size().
  std::uint32_t Get(std::uint64_t index) const {
    const std::uintptr_t e = regions_[index >> kRegionShift];
    if ((e & kTagMask) == 0) {
      return e == 0 ? kUnmapped
                    : reinterpret_cast<const std::uint32_t*>(e)[index & (kRegionSize - 1)];
    }
    return e == kImplicitTag ? implicit_->At(index) : GetSparse(e, index);
  }

  // REQUIRES: index < size(). Setting kUnmapped removes the entry.
  void Set(std::uint64_t index, std::uint32_t value) {
    const std::uintptr_t e = regions_[index >> kRegionShift];
    if (e != 0 && (e & kTagMask) == 0) {
      reinterpret_cast<std::uint32_t*>(e)[index & (kRegionSize - 1)] = value;
      return;
    }
    SetSlow(index, value);
  }

  // Hints the cache that `index` is about to be read or written (dense only).
  void Prefetch(std::uint64_t index) const {
    const std::uintptr_t e = regions_[index >> kRegionShift];
    if (e != 0 && (e & kTagMask) == 0) {
      __builtin_prefetch(reinterpret_cast<const std::uint32_t*>(e) + (index & (kRegionSize - 1)),
                         1);
    }
  }

  // Makes every region dense (e.g. before filling the whole drive), keeping
  // the entries already mapped.
  void MakeAllDense();

  // Makes every region implicit: Get(i) returns entries->At(i) until i's
  // region is first Set, which stores the region's entries densely.
  // REQUIRES: nothing stored yet; `entries` outlives the map.
  void SetAllImplicit(const ImplicitEntries* entries);

  // The dense array of `region` (kRegionSize entries, those past size()
  // unused), or null if the region is not dense.
  std::uint32_t* DenseRegion(std::uint64_t region) const {
    const std::uintptr_t e = regions_[region];
    return e != 0 && (e & kTagMask) == 0 ? reinterpret_cast<std::uint32_t*>(e) : nullptr;
  }
  std::uint64_t regions() const { return regions_.size(); }

  std::uint64_t size() const { return size_; }
  std::uint64_t dense_regions() const { return dense_regions_; }
  std::uint64_t sparse_regions() const { return sparse_regions_; }
  std::uint64_t implicit_regions() const { return implicit_regions_; }
  std::uint64_t MemoryBytes() const;

 private:
  // A region entry is 0 (empty), a dense array pointer, a sparse table
  // pointer with kSparseTag set, or kImplicitTag. Sparse table: word 0 =
  // count | log2(slots) << 32, then `slots` words of offset << 32 | value,
  // kEmptySlot when free.
  static constexpr std::uintptr_t kSparseTag = 1;
  static constexpr std::uintptr_t kImplicitTag = 2;
  static constexpr std::uintptr_t kTagMask = 3;
  static constexpr std::uint64_t kEmptySlot = ~std::uint64_t{0};
  static constexpr int kMinLog2Slots = 2;

  std::uint32_t GetSparse(std::uintptr_t e, std::uint64_t index) const;
  void SetSlow(std::uint64_t index, std::uint32_t value);
  std::uint32_t* MakeDense(std::uint64_t region);
  std::uint64_t* NewTable(int log2_slots);
  void FreeTable(std::uint64_t* table);
  static std::uint64_t SlotOf(std::uint32_t offset, int log2_slots) {
    return (offset * 0x9E3779B1u) >> (32 - log2_slots);
  }

  std::uint64_t size_;
  std::vector<std::uintptr_t> regions_;
  ItemPool dense_pool_;
  std::uint64_t dense_regions_ = 0;
  std::uint64_t sparse_regions_ = 0;
  std::uint64_t implicit_regions_ = 0;
  std::uint64_t sparse_bytes_ = 0;
  const ImplicitEntries* implicit_ = nullptr;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_SPARSE_MAP_H_
