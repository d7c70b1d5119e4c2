// Fixed-size items carved out of 2 MiB-aligned chunks mapped directly from
// the kernel (mmap, so no allocator padding) that ask for transparent huge
// pages (madvise), so that random accesses over gigabytes of FTL tables do not
// also miss the TLB. Freed items are recycled (LIFO); chunks are unmapped only
// when the pool is destroyed. Memory: whole chunks (2 MiB, or one item rounded
// up to 2 MiB if larger), at most one chunk partly used (its untouched pages
// take no RAM). Thread-safety: none; owned by one Ftl.
#ifndef DEVMODEL_SRC_ITEM_POOL_H_
#define DEVMODEL_SRC_ITEM_POOL_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace devmodel::internal {

class ItemPool {
 public:
  static constexpr std::size_t kChunkAlign = std::size_t{2} << 20;

  // REQUIRES: item_bytes > 0. Items are 8-byte aligned.
  explicit ItemPool(std::size_t item_bytes)
      : item_bytes_((item_bytes + 7) / 8 * 8),
        chunk_bytes_((item_bytes_ + kChunkAlign - 1) / kChunkAlign * kChunkAlign),
        items_per_chunk_(chunk_bytes_ / item_bytes_) {}
  ~ItemPool() {
    for (void* chunk : chunks_) munmap(chunk, chunk_bytes_);
  }
  ItemPool(const ItemPool&) = delete;
  ItemPool& operator=(const ItemPool&) = delete;

  // Uninitialized storage for one item; throws std::bad_alloc.
  void* Allocate() {
    if (!free_.empty()) {
      void* item = free_.back();
      free_.pop_back();
      return item;
    }
    if (chunks_.empty() || next_in_chunk_ == items_per_chunk_) {
      chunks_.reserve(chunks_.size() + 1);  // no throw after mapping
      chunks_.push_back(MapChunk(chunk_bytes_));
      next_in_chunk_ = 0;
    }
    return static_cast<char*>(chunks_.back()) + item_bytes_ * next_in_chunk_++;
  }
  // REQUIRES: `item` came from this pool's Allocate and is not free.
  void Free(void* item) { free_.push_back(item); }

  std::size_t item_bytes() const { return item_bytes_; }
  // Items ever carved from chunks (the most in use at once) and the free
  // list's capacity: with these a pool rebuilt by a state file reports the
  // same MemoryBytes as the one it was saved from.
  std::uint64_t items_carved() const {
    return chunks_.empty() ? 0 : (chunks_.size() - 1) * items_per_chunk_ + next_in_chunk_;
  }
  std::uint64_t free_capacity() const { return free_.capacity(); }
  void ReserveFree(std::size_t items) { free_.reserve(items); }
  std::uint64_t MemoryBytes() const {
    return std::uint64_t{chunks_.size()} * chunk_bytes_ +
           (chunks_.capacity() + free_.capacity()) * sizeof(void*);
  }

 private:
  // `bytes` (a multiple of kChunkAlign) at a kChunkAlign-aligned address.
  static void* MapChunk(std::size_t bytes) {
    const std::size_t span = bytes + kChunkAlign;
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t aligned = (start + kChunkAlign - 1) & ~(kChunkAlign - 1);
    if (aligned > start) munmap(p, aligned - start);
    if (start + span > aligned + bytes) {
      munmap(reinterpret_cast<void*>(aligned + bytes), start + span - (aligned + bytes));
    }
    madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // a hint: may fail
    return reinterpret_cast<void*>(aligned);
  }

  std::size_t item_bytes_;
  std::size_t chunk_bytes_;
  std::size_t items_per_chunk_;
  std::size_t next_in_chunk_ = 0;
  std::vector<void*> chunks_;
  std::vector<void*> free_;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_ITEM_POOL_H_
