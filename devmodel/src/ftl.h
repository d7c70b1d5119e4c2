// Page-level FTL without timing: maps logical units to physical slots, stripes
// host writes over all dies one program unit at a time, and reclaims space by
// greedy garbage collection per die (victim = closed block with fewest valid
// units; among equals the one whose count changed last). Collection runs
// incrementally after host programs below a background mark and all at once
// (host waits) below a foreground mark. Timing is added by a listener
// (SsdModel) that puts each program, GC move and erase on the die timelines;
// with no listener the FTL runs untimed (preconditioning, WAF tests).
// Memory grows with data written: a P2L array (4 bytes per slot) per non-free
// block from a huge-page pool, the L2P map (sparse_map.h), and 16 bytes of
// metadata per block plus 8 bytes per 64 blocks.
// Victim choice: each block has a 64-bit key (valid count, then recency) that
// only decreases while the block is closed, so a per-group-of-64 minimum over
// closed blocks is kept in O(1) and a victim costs one scan of the group
// minima.
// Thread-safety: none.
#ifndef DEVMODEL_SRC_FTL_H_
#define DEVMODEL_SRC_FTL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fast_div.h"
#include "item_pool.h"
#include "model_state.h"
#include "rng.h"
#include "sparse_map.h"

namespace devmodel::internal {

struct FtlGeometry {
  std::uint32_t dies = 1;
  std::uint32_t blocks_per_die = 64;            // erase units (all planes of a die)
  std::uint32_t slots_per_block = 256;          // mapping units per erase unit
  std::uint32_t slots_per_program = 8;          // mapping units per program (all planes)
  std::uint32_t slots_per_page = 4;             // mapping units per page of one plane
  std::uint64_t exported_slots = 0;             // logical units the host sees
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
  virtual void OnHostProgram(std::uint32_t die, std::uint32_t block, std::uint32_t first_slot,
                             std::uint32_t slots, std::uint32_t host_slots) = 0;
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
  std::uint64_t gc_runs = 0;  // victims collected
  std::uint64_t gc_slots_moved = 0;
  std::uint64_t erases = 0;
  std::uint64_t trimmed_slots = 0;
  std::uint64_t dropped_writes = 0;  // no die had space (must stay 0)
};

class Ftl {
 public:
  static constexpr std::uint32_t kUnmapped = SparseMap::kUnmapped;
  static constexpr std::uint32_t kNoBlock = 0xFFFFFFFFu;
  static constexpr std::uint32_t kMaxSlotsPerBlock = (1u << 23) - 1;

  // REQUIRES: geometry consistent (SsdModel validates): slots fit in 32 bits,
  // slots_per_block <= kMaxSlotsPerBlock, each die has more blocks than its
  // share of exported units plus reserve.
  Ftl(const FtlGeometry& geometry, FtlListener* listener);
  ~Ftl();

  void set_listener(FtlListener* listener) { listener_ = listener; }
  const FtlGeometry& geometry() const { return g_; }

  // REQUIRES: lpn < exported_slots for all of these.
  void Write(std::uint64_t lpn);
  // Write() for each of `lpns` in order, with the mapping tables prefetched a
  // few writes ahead (same result, faster on large drives).
  void WriteMany(const std::uint64_t* lpns, std::size_t count);
  void Trim(std::uint64_t lpn);
  std::uint32_t Lookup(std::uint64_t lpn) const { return l2p_.Get(lpn); }

  // Allocates the whole L2P table densely up front (before writing every
  // unit): the sparse stage would only be converted region by region.
  void ReserveFullMap() { l2p_.MakeAllDense(); }

  // The state of Write(0), Write(1), ... Write(exported_slots - 1) on a fresh
  // FTL, built without touching the mapping tables: with no listener each
  // program unit goes to the next die in turn and a die fills its blocks in
  // order, so a unit's place follows from its number (FullFill). The block
  // metadata, counters and dies are built a program unit at a time as the
  // writes would leave them; the L2P map and the closed blocks' P2L arrays
  // stay implicit until first changed (a read of a filled drive changes
  // neither). Where a die could not take its share (no such validated
  // geometry) the units are written one by one instead.
  // REQUIRES: nothing written yet; no listener.
  void PreconditionFull();

  // Builds, on a fresh FTL, the state of "every unit written once in order,
  // then `overwrites` uniformly random overwrites" without replaying each
  // overwrite over the mapping tables. Exact in distribution: per-block valid
  // counts, GC victim order, free blocks and open blocks (the block-level
  // algorithm runs unchanged on counts: an overwrite hits block b with
  // probability valid(b) / units, as a uniformly random unit would).
  // Approximated: which units survive in a block (a uniformly random subset
  // of its slots: exact when each block fills quickly compared with the
  // writes since), which LPNs share a block (a seeded random permutation:
  // exact once every unit has been overwritten, while a replay keeps units
  // never overwritten in their sequential-fill order), and a victim whose
  // collection is in progress (rescanned from its first slot).
  // REQUIRES: nothing written yet; no listener.
  void BuildSteadyState(std::uint64_t overwrites, Rng& rng);

  // The state a precondition left, for a state file (state_cache.h).
  // True when it can be saved: no implicit tables (PreconditionFull's) and
  // every L2P region dense (a steady precondition's map).
  bool CanSaveState() const;
  // Appends the block keys, group minima, dies, counters and pool sizes to
  // *meta (host byte order); the L2P entries are read through l2p(), whose
  // regions are all dense when CanSaveState() (a state file's array; a
  // model state's SaveFullState reads them whatever their kind).
  void SaveState(std::string* meta) const;
  // On a fresh FTL of the same geometry: restores what SaveState wrote and
  // the L2P from `l2p` (exported_slots entries); P2L arrays are rebuilt from
  // the L2P (a slot no unit maps to reads kUnmapped: the stale entries a
  // replay leaves behind a victim's cursor and past a block's write pointer
  // are never read). Checks every index and that the L2P's units per block
  // match the valid counts before changing anything: false + *error (and the
  // FTL untouched) if not. REQUIRES: nothing written yet; no listener.
  bool LoadState(const char* meta, std::size_t meta_bytes, const std::uint32_t* l2p,
                 std::string* error);
  const SparseMap& l2p() const { return l2p_; }

  // The whole state of an FTL in use, for a saved model state
  // (model_state.h): SaveState's metadata, then the L2P entries of every
  // region that maps a unit. REQUIRES: not inside BuildSteadyState.
  void SaveFullState(StateWriter* out) const;
  // On a fresh FTL of the same geometry, no listener: restores what
  // SaveFullState wrote, with LoadState's checks (false + *error, the FTL
  // untouched, on data that does not fit). The L2P keeps its sparse regions
  // sparse; P2L arrays are rebuilt as LoadState rebuilds them.
  bool LoadFullState(StateReader* in, std::string* error);

  // Pads and dispatches the host program unit being filled, if any.
  void FlushPending();
  // True if `ppn` belongs to the host program unit still being filled.
  bool IsPendingHost(std::uint32_t ppn) const;

  // Finishes the victim in progress on `die` or collects a new one; false if
  // no victim would free space.
  bool CollectOne(std::uint32_t die);
  // Moves up to `max_moves` valid units of the victim in progress (choosing
  // one if needed) and erases it once empty; false if no progress is possible.
  // With `erase_alone`, a call that moved units leaves the emptied victim's
  // erase to the next call, so one call books moves or an erase, not both.
  bool CollectStep(std::uint32_t die, std::uint32_t max_moves, bool erase_alone = false);
  std::uint32_t free_blocks(std::uint32_t die) const {
    return static_cast<std::uint32_t>(dies_[die].free.size());
  }
  std::uint32_t DieOfPpn(std::uint32_t ppn) const { return per_die_.Div(ppn); }
  std::uint32_t BlockOfPpn(std::uint32_t ppn) const { return per_block_.Div(ppn); }
  // Global page number (pages of one plane) holding `ppn`.
  std::uint32_t PageOfPpn(std::uint32_t ppn) const { return per_page_.Div(ppn); }

  const FtlCounters& counters() const { return counters_; }
  // Logical units currently mapped (written and not trimmed since).
  std::uint64_t mapped_slots() const { return mapped_slots_; }
  std::uint64_t MemoryBytes() const;

  // Checks every invariant linking L2P, P2L and block metadata (every mapped
  // unit sits in a non-free block whose P2L names it back, valid counts match,
  // each group minimum is its closed blocks' smallest key, or marks a group
  // with none closed). O(capacity): for tests. False + *error if broken.
  bool CheckConsistency(std::string* error) const;
  // Valid units of every closed block (for statistics in tests).
  std::vector<std::uint32_t> ClosedBlockValidCounts() const;

  // Test hook: moves the recency clock (40 bits) close to its wrap-around.
  void set_recency_clock_for_testing(std::uint64_t clock) { clock_ = clock; }

 private:
  friend class FtlTestPeer;  // ftl_test.cc: block keys and group minima

  // LoadState's body: the L2P entry of unit lpn is get(lpn); `dense_l2p`,
  // when not null, holds them all (a state file's array, copied at once).
  template <typename GetL2p>
  bool LoadStateWith(const char* meta, std::size_t meta_bytes, const GetL2p& get,
                     const std::uint32_t* dense_l2p, std::string* error);

  // Block key: kNotClosed while free, open or being collected; valid units in
  // bits 40..62; (kStampMask - stamp of the last change) in bits 0..39, so the
  // smallest key of a closed block is the greedy victim, most recent first.
  static constexpr std::uint64_t kStampMask = (std::uint64_t{1} << 40) - 1;
  static constexpr std::uint64_t kValidOne = std::uint64_t{1} << 40;
  static constexpr std::uint64_t kNotClosed = std::uint64_t{1} << 63;
  static constexpr std::uint32_t kGroupShift = 6;  // 64 blocks per group

  struct Block {
    std::uint64_t key = kNotClosed;
    std::uint32_t* p2l = nullptr;  // lpn per slot, kUnmapped once invalid; null when free
  };
  struct Die {
    std::vector<std::uint32_t> free;  // global block ids
    std::uint32_t host_block = kNoBlock, host_ptr = 0;
    std::uint32_t gc_block = kNoBlock, gc_ptr = 0;
    std::uint32_t gc_pages_read = 0;  // since the last GC program
    std::uint32_t victim = kNoBlock, victim_cursor = 0, victim_last_page = kNoBlock;
  };

  // Where PreconditionFull's order puts each unit: program unit u (of
  // slots_per_program units) on die u % dies, as that die's (u / dies)-th
  // program unit from its first block on.
  class FullFill final : public ImplicitEntries {
   public:
    explicit FullFill(const FtlGeometry& g);
    std::uint32_t At(std::uint64_t lpn) const override;  // the unit's ppn
    // The unit in `ppn`; kUnmapped for a slot the fill left empty or padded.
    std::uint32_t LpnAt(std::uint32_t ppn) const;

   private:
    FtlGeometry g_;
    FastDivU32 per_program_, per_die_slots_, dies_;
  };

  static std::uint32_t Valid(std::uint64_t key) {
    return static_cast<std::uint32_t>(key >> 40) & kMaxSlotsPerBlock;
  }
  std::uint32_t AllocateBlock(std::uint32_t die);  // kNoBlock if none free
  void CloseBlock(std::uint32_t block);
  void Invalidate(std::uint32_t ppn);
  void Restamp(std::uint32_t block);
  std::uint64_t& GroupMinOf(std::uint32_t block) {
    const std::uint32_t die = blocks_per_die_.Div(block);
    return group_min_[die * groups_per_die_ + ((block - die * g_.blocks_per_die) >> kGroupShift)];
  }
  void RecomputeGroupMin(std::uint32_t block);
  void RenumberStamps();
  void InvalidateInBlock(std::uint32_t block);
  std::uint32_t SampleBlockByValid(Rng& rng) const;
  void AssignUnits(Rng& rng);
  void Place(std::uint64_t lpn);
  bool FrontierHasHostBlock();  // opens one on the frontier die or the next
  void PlaceProgramUnitCounts();
  bool FullFillFits() const;
  // The block's P2L array, written out first if it is still implicit.
  std::uint32_t* P2l(std::uint32_t block) {
    if (!implicit_p2l_.empty() && implicit_p2l_[block]) MaterializeP2l(block);
    return blocks_[block].p2l;
  }
  void MaterializeP2l(std::uint32_t block);
  bool OpenHostBlock(std::uint32_t die);
  void DispatchHostProgram(std::uint32_t die);
  inline bool GcPlace(std::uint32_t die, std::uint32_t lpn);
  std::uint32_t GcPlaceCounts(std::uint32_t die, std::uint32_t units);
  // The closed block GC would collect next on `die`; kNoBlock if none is
  // worth it. PickVictim claims it (no longer closed) for collection.
  std::uint32_t FindVictim(std::uint32_t die) const;
  std::uint32_t PickVictim(std::uint32_t die);  // kNoBlock if none worth it

  FtlGeometry g_;
  FtlListener* listener_;
  FastDivU32 per_die_;         // by slots per die
  FastDivU32 per_block_;       // by slots per block
  FastDivU32 per_page_;        // by slots per page
  FastDivU32 per_program_;     // by slots per program unit
  FastDivU32 blocks_per_die_;  // by blocks per die
  std::uint32_t groups_per_die_;
  SparseMap l2p_;
  ItemPool p2l_pool_;
  std::vector<Block> blocks_;
  std::vector<std::uint64_t> group_min_;  // min block key per group, per die
  std::vector<Die> dies_;
  std::uint64_t clock_ = 0;              // recency stamps handed out
  std::uint32_t frontier_die_ = 0;       // die receiving host writes
  std::uint32_t pending_host_ = 0;       // host units in the open program unit
  bool counts_only_ = false;             // BuildSteadyState: no L2P/P2L updates
  std::unique_ptr<FullFill> full_fill_;  // PreconditionFull's implicit entries
  std::vector<bool> implicit_p2l_;       // per block: P2L still full_fill_'s
  std::uint64_t mapped_slots_ = 0;       // see mapped_slots()
  FtlCounters counters_;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_FTL_H_
