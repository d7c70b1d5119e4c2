// Page-level FTL without timing: maps logical units to physical slots, stripes
// host writes over all dies one program unit at a time, and reclaims space by
// greedy garbage collection per die (victim = closed block with fewest valid
// units, found in O(1) amortized through per-valid-count buckets), done
// incrementally after host programs below a background mark and all at once
// (host waits) below a foreground mark. Timing is
// added by a listener (SsdModel) that puts each program, GC move and erase on
// the die timelines; with no listener the FTL runs untimed (preconditioning,
// WAF tests). Memory grows with data written: a P2L array per non-free block,
// L2P leaves per written region, 20 bytes of metadata per block.
// Thread-safety: none.
#ifndef DEVMODEL_SRC_FTL_H_
#define DEVMODEL_SRC_FTL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "sparse_map.h"

namespace devmodel::internal {

struct FtlGeometry {
  std::uint32_t dies = 1;
  std::uint32_t blocks_per_die = 64;     // erase units (all planes of a die)
  std::uint32_t slots_per_block = 256;   // mapping units per erase unit
  std::uint32_t slots_per_program = 8;   // mapping units per program (all planes)
  std::uint32_t slots_per_page = 4;      // mapping units per page of one plane
  std::uint64_t exported_slots = 0;      // logical units the host sees
  std::uint32_t gc_foreground_free_blocks = 2;  // per die, >= 2: host waits for GC
  // Per die, >= foreground: below it every host program unit is followed by
  // incremental GC of (background - free) program units' worth of moves.
  std::uint32_t gc_background_free_blocks = 8;
};

// Receives the physical operations the FTL decides on, in order.
class FtlListener {
 public:
  virtual ~FtlListener() = default;
  // A full (or padded) host program unit left the write buffer for `die`.
  // `host_slots` of its `slots` carry host data (the rest is padding).
  virtual void OnHostProgram(std::uint32_t die, std::uint32_t block,
                             std::uint32_t first_slot, std::uint32_t slots,
                             std::uint32_t host_slots) = 0;
  // GC filled one program unit on `die` after reading `pages_read` pages.
  virtual void OnGcProgram(std::uint32_t die, std::uint32_t pages_read) = 0;
  // GC erased a victim block on `die`.
  virtual void OnErase(std::uint32_t die) = 0;
  // Die for the next host program unit after one went to `previous`
  // (default: round robin). Timing layers pick the least busy die.
  virtual std::uint32_t NextHostDie(std::uint32_t previous, std::uint32_t dies) {
    return (previous + 1) % dies;
  }
};

struct FtlCounters {
  std::uint64_t host_slots_written = 0;
  std::uint64_t nand_slots_programmed = 0;  // host + GC + padding
  std::uint64_t padding_slots = 0;
  std::uint64_t gc_runs = 0;                // victims collected
  std::uint64_t gc_slots_moved = 0;
  std::uint64_t erases = 0;
  std::uint64_t trimmed_slots = 0;
  std::uint64_t dropped_writes = 0;         // no die had space (must stay 0)
};

class Ftl {
 public:
  static constexpr std::uint32_t kUnmapped = SparseMap::kUnmapped;
  static constexpr std::uint32_t kNoBlock = 0xFFFFFFFFu;

  // REQUIRES: geometry consistent (SsdModel validates): slots fit in 32 bits,
  // each die has more blocks than its share of exported units plus reserve.
  Ftl(const FtlGeometry& geometry, FtlListener* listener);
  ~Ftl();

  void set_listener(FtlListener* listener) { listener_ = listener; }
  const FtlGeometry& geometry() const { return g_; }

  // REQUIRES: lpn < exported_slots for all three.
  void Write(std::uint64_t lpn);
  void Trim(std::uint64_t lpn);
  std::uint32_t Lookup(std::uint64_t lpn) const { return l2p_.Get(lpn); }

  // Pads and dispatches the host program unit being filled, if any.
  void FlushPending();
  // True if `ppn` belongs to the host program unit still being filled.
  bool IsPendingHost(std::uint32_t ppn) const;

  // Finishes the victim in progress on `die` or collects a new one; false if
  // no victim would free space.
  bool CollectOne(std::uint32_t die);
  // Moves up to `max_moves` valid units of the victim in progress (choosing
  // one if needed) and erases it once empty; false if no progress is possible.
  bool CollectStep(std::uint32_t die, std::uint32_t max_moves);
  std::uint32_t free_blocks(std::uint32_t die) const {
    return static_cast<std::uint32_t>(dies_[die].free.size());
  }
  std::uint32_t DieOfPpn(std::uint32_t ppn) const {
    return ppn / g_.slots_per_block / g_.blocks_per_die;
  }

  const FtlCounters& counters() const { return counters_; }
  std::uint64_t MemoryBytes() const;

 private:
  struct Block {
    std::uint32_t valid = 0;
    std::int32_t prev = -1;  // bucket list links (closed blocks only)
    std::int32_t next = -1;
    std::uint32_t slab = kNoBlock;  // P2L slab index, kNoBlock when free
    std::uint8_t state = 0;         // kFree / kOpen / kClosed
  };
  struct Die {
    std::vector<std::uint32_t> free;  // global block ids
    std::uint32_t host_block = kNoBlock, host_ptr = 0;
    std::uint32_t gc_block = kNoBlock, gc_ptr = 0;
    std::uint32_t gc_pages_read = 0;  // since the last GC program
    std::uint32_t victim = kNoBlock, victim_cursor = 0, victim_last_page = kNoBlock;
    std::vector<std::int32_t> bucket;  // head per valid count
    std::uint32_t min_bucket = 0;      // no closed block has fewer valid units
  };

  std::uint32_t AllocateBlock(std::uint32_t die);  // kNoBlock if none free
  void CloseBlock(std::uint32_t block);
  void Invalidate(std::uint32_t ppn);
  void BucketInsert(std::uint32_t block);
  void BucketRemove(std::uint32_t block);
  bool OpenHostBlock(std::uint32_t die);
  void DispatchHostProgram(std::uint32_t die);
  bool GcPlace(std::uint32_t die, std::uint32_t lpn);
  std::uint32_t* P2l(std::uint32_t block) { return slabs_[blocks_[block].slab].get(); }

  FtlGeometry g_;
  FtlListener* listener_;
  SparseMap l2p_;
  std::vector<Block> blocks_;
  std::vector<Die> dies_;
  std::vector<std::unique_ptr<std::uint32_t[]>> slabs_;
  std::vector<std::uint32_t> free_slabs_;
  std::uint32_t frontier_die_ = 0;   // die receiving host writes
  std::uint32_t pending_host_ = 0;   // host units in the open program unit
  FtlCounters counters_;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_FTL_H_
