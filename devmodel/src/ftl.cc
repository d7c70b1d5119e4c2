#include "ftl.h"

#include <algorithm>

namespace devmodel::internal {

Ftl::Ftl(const FtlGeometry& geometry, FtlListener* listener)
    : g_(geometry),
      listener_(listener),
      per_die_(geometry.blocks_per_die * geometry.slots_per_block),
      per_block_(geometry.slots_per_block),
      per_page_(geometry.slots_per_page),
      per_program_(geometry.slots_per_program),
      blocks_per_die_(geometry.blocks_per_die),
      groups_per_die_((geometry.blocks_per_die + (1u << kGroupShift) - 1) >> kGroupShift),
      l2p_(geometry.exported_slots),
      p2l_pool_(std::size_t{geometry.slots_per_block} * sizeof(std::uint32_t)),
      blocks_(static_cast<std::size_t>(geometry.dies) * geometry.blocks_per_die),
      group_min_(static_cast<std::size_t>(geometry.dies) * groups_per_die_, ~std::uint64_t{0}),
      dies_(geometry.dies) {
  for (std::uint32_t d = 0; d < g_.dies; ++d) {
    Die& die = dies_[d];
    die.free.reserve(g_.blocks_per_die);
    for (std::uint32_t b = g_.blocks_per_die; b-- > 0;) {
      die.free.push_back(d * g_.blocks_per_die + b);
    }
  }
}

Ftl::~Ftl() = default;

std::uint32_t Ftl::AllocateBlock(std::uint32_t die) {
  Die& d = dies_[die];
  if (d.free.empty()) return kNoBlock;
  const std::uint32_t b = d.free.back();
  d.free.pop_back();
  Block& blk = blocks_[b];
  blk.key = kNotClosed;
  blk.p2l = static_cast<std::uint32_t*>(p2l_pool_.Allocate());
  return b;
}

void Ftl::RenumberStamps() {
  // The 40-bit clock wrapped: renumber closed blocks 1..k in stamp order.
  std::vector<std::uint32_t> closed;
  for (std::uint32_t b = 0; b < blocks_.size(); ++b) {
    if ((blocks_[b].key & kNotClosed) == 0) closed.push_back(b);
  }
  std::sort(closed.begin(), closed.end(), [this](std::uint32_t a, std::uint32_t b) {
    return (blocks_[a].key & kStampMask) > (blocks_[b].key & kStampMask);  // oldest first
  });
  clock_ = 0;
  for (std::uint32_t b : closed) {
    blocks_[b].key = (blocks_[b].key & ~kStampMask) | (kStampMask - ++clock_);
  }
  // Group minima are recomputed from the new keys.
  for (std::uint32_t d = 0; d < g_.dies; ++d) {
    for (std::uint32_t grp = 0; grp < groups_per_die_; ++grp) {
      RecomputeGroupMin(d * g_.blocks_per_die + (grp << kGroupShift));
    }
  }
}

void Ftl::Restamp(std::uint32_t block) {
  if (clock_ >= kStampMask) RenumberStamps();
  Block& blk = blocks_[block];
  blk.key = (blk.key & ~kStampMask) | (kStampMask - ++clock_);
  std::uint64_t& group_min = GroupMinOf(block);
  group_min = std::min(group_min, blk.key);
}

void Ftl::RecomputeGroupMin(std::uint32_t block) {
  const std::uint32_t die = blocks_per_die_.Div(block);
  const std::uint32_t die_first = die * g_.blocks_per_die;
  const std::uint32_t first = die_first + ((block - die_first) >> kGroupShift << kGroupShift);
  const std::uint32_t end = std::min(first + (1u << kGroupShift), die_first + g_.blocks_per_die);
  std::uint64_t m = ~std::uint64_t{0};
  for (std::uint32_t b = first; b < end; ++b) m = std::min(m, blocks_[b].key);
  GroupMinOf(block) = m;
}

void Ftl::CloseBlock(std::uint32_t block) {
  blocks_[block].key &= ~kNotClosed;
  Restamp(block);
}

void Ftl::Invalidate(std::uint32_t ppn) {
  const std::uint32_t b = per_block_.Div(ppn);
  P2l(b)[ppn - b * g_.slots_per_block] = kUnmapped;
  InvalidateInBlock(b);
}

void Ftl::InvalidateInBlock(std::uint32_t block) {
  Block& blk = blocks_[block];
  blk.key -= kValidOne;
  if ((blk.key & kNotClosed) == 0) Restamp(block);
}

bool Ftl::OpenHostBlock(std::uint32_t die) {
  Die& d = dies_[die];
  // Foreground GC: the host stream may not take the last reserve blocks.
  for (std::uint32_t i = 0; i < g_.blocks_per_die && d.free.size() <= g_.gc_foreground_free_blocks;
       ++i) {
    if (!CollectOne(die)) break;
  }
  if (d.free.size() <= 1) return false;  // the last free block is GC's
  const std::uint32_t b = AllocateBlock(die);
  if (b == kNoBlock) return false;
  d.host_block = b;
  d.host_ptr = 0;
  return true;
}

void Ftl::Write(std::uint64_t lpn) {
  // Invalidate before placing: placing may run foreground GC, which must not
  // move the old copy (its P2L slot is cleared here; Place() updates the L2P).
  const std::uint32_t old = l2p_.Get(lpn);
  if (old != kUnmapped) {
    Invalidate(old);
  } else {
    ++mapped_slots_;
  }
  Place(lpn);
}

bool Ftl::FrontierHasHostBlock() {
  for (std::uint32_t tries = 0;; ++tries) {
    if (dies_[frontier_die_].host_block != kNoBlock || OpenHostBlock(frontier_die_)) return true;
    if (tries + 1 >= g_.dies) return false;
    frontier_die_ = (frontier_die_ + 1) % g_.dies;
  }
}

void Ftl::Place(std::uint64_t lpn) {
  ++counters_.host_slots_written;
  if (!FrontierHasHostBlock()) {
    ++counters_.dropped_writes;  // unreachable with validated geometry
    if (!counts_only_) l2p_.Set(lpn, kUnmapped);
    --mapped_slots_;
    return;
  }
  const std::uint32_t die = frontier_die_;
  Die& d = dies_[die];
  const std::uint32_t slot = d.host_ptr++;
  Block& blk = blocks_[d.host_block];
  blk.key += kValidOne;
  if (!counts_only_) {
    blk.p2l[slot] = static_cast<std::uint32_t>(lpn);
    l2p_.Set(lpn, d.host_block * g_.slots_per_block + slot);
  }
  ++pending_host_;
  if (per_program_.Mod(d.host_ptr) == 0) DispatchHostProgram(die);
}

void Ftl::WriteMany(const std::uint64_t* lpns, std::size_t count) {
  // Three-stage software pipeline over the writes to come: the L2P entry,
  // then the block holding the old copy, then the old copy's P2L slot.
  constexpr std::size_t kL2pAhead = 24, kBlockAhead = 12, kSlotAhead = 6;
  for (std::size_t i = 0; i < count; ++i) {
    if (i + kL2pAhead < count) l2p_.Prefetch(lpns[i + kL2pAhead]);
    if (i + kBlockAhead < count) {
      const std::uint32_t ppn = l2p_.Get(lpns[i + kBlockAhead]);
      if (ppn != kUnmapped) __builtin_prefetch(&blocks_[per_block_.Div(ppn)], 1);
    }
    if (i + kSlotAhead < count) {
      const std::uint32_t ppn = l2p_.Get(lpns[i + kSlotAhead]);
      if (ppn != kUnmapped) {
        const std::uint32_t b = per_block_.Div(ppn);
        const std::uint32_t* p2l = blocks_[b].p2l;
        if (p2l != nullptr && (implicit_p2l_.empty() || !implicit_p2l_[b])) {
          __builtin_prefetch(p2l + (ppn - b * g_.slots_per_block), 1);
        }
      }
    }
    Write(lpns[i]);
  }
}

namespace {

// A seeded bijection on [0, n): a 4-round Feistel network on the smallest
// power of two >= n (alternating halves), walked until it lands below n.
class RandomPermutation {
 public:
  RandomPermutation(std::uint64_t n, Rng& rng) : n_(n) {
    int bits = 2;
    while (bits < 64 && (std::uint64_t{1} << bits) < n) ++bits;
    right_bits_ = bits / 2;
    left_mask_ = (std::uint64_t{1} << (bits - right_bits_)) - 1;
    right_mask_ = (std::uint64_t{1} << right_bits_) - 1;
    for (std::uint64_t& key : keys_) key = rng.Next();
  }
  std::uint64_t operator()(std::uint64_t x) const {
    do {
      std::uint64_t left = x >> right_bits_, right = x & right_mask_;
      left ^= Mix(right ^ keys_[0]) & left_mask_;
      right ^= Mix(left ^ keys_[1]) & right_mask_;
      left ^= Mix(right ^ keys_[2]) & left_mask_;
      right ^= Mix(left ^ keys_[3]) & right_mask_;
      x = left << right_bits_ | right;
    } while (x >= n_);
    return x;
  }

 private:
  static std::uint64_t Mix(std::uint64_t v) {
    v *= 0x9E3779B97F4A7C15ull;
    v ^= v >> 29;
    v *= 0xBF58476D1CE4E5B9ull;
    return v ^ (v >> 32);
  }
  std::uint64_t n_;
  int right_bits_;
  std::uint64_t left_mask_, right_mask_;
  std::uint64_t keys_[4];
};

}  // namespace

std::uint32_t Ftl::SampleBlockByValid(Rng& rng) const {
  // Rejection sampling: a block drawn uniformly is kept with probability
  // valid / slots_per_block, i.e. blocks come out in proportion to valid.
  for (;;) {
    const auto b = static_cast<std::uint32_t>(rng.Below(blocks_.size()));
    const std::uint32_t valid = Valid(blocks_[b].key);
    if (valid != 0 && rng.Below(g_.slots_per_block) < valid) return b;
  }
}

void Ftl::BuildSteadyState(std::uint64_t overwrites, Rng& rng) {
  counts_only_ = true;
  for (std::uint64_t lpn = 0; lpn < g_.exported_slots; ++lpn) Place(lpn);
  for (std::uint64_t i = 0; i < overwrites; ++i) {
    InvalidateInBlock(SampleBlockByValid(rng));
    Place(0);
  }
  counts_only_ = false;
  mapped_slots_ = g_.exported_slots;
  AssignUnits(rng);
}

Ftl::FullFill::FullFill(const FtlGeometry& g)
    : g_(g),
      per_program_(g.slots_per_program),
      per_die_slots_(g.blocks_per_die * g.slots_per_block),
      dies_(g.dies) {}

std::uint32_t Ftl::FullFill::At(std::uint64_t lpn) const {
  const auto unit = static_cast<std::uint32_t>(lpn);
  const std::uint32_t program = per_program_.Div(unit);
  const std::uint32_t die = dies_.Mod(program);
  // The unit's slot among its die's, counted from the die's first block.
  const std::uint32_t in_die =
      dies_.Div(program) * g_.slots_per_program + (unit - program * g_.slots_per_program);
  return die * g_.blocks_per_die * g_.slots_per_block + in_die;
}

std::uint32_t Ftl::FullFill::LpnAt(std::uint32_t ppn) const {
  const std::uint32_t die = per_die_slots_.Div(ppn);
  const std::uint32_t in_die = ppn - die * g_.blocks_per_die * g_.slots_per_block;
  const std::uint32_t program = per_program_.Div(in_die);
  const std::uint64_t lpn = (std::uint64_t{program} * g_.dies + die) * g_.slots_per_program +
                            (in_die - program * g_.slots_per_program);
  return lpn < g_.exported_slots ? static_cast<std::uint32_t>(lpn) : kUnmapped;
}

bool Ftl::FullFillFits() const {
  // Program units wrap onto whole blocks, and each die opens fewer blocks
  // than it has (OpenHostBlock refuses a die's last free block, which would
  // move the frontier to another die out of turn).
  if (g_.slots_per_block % g_.slots_per_program != 0) return false;
  const std::uint64_t programs =
      (g_.exported_slots + g_.slots_per_program - 1) / g_.slots_per_program;
  const std::uint64_t per_die = (programs + g_.dies - 1) / g_.dies;
  const std::uint64_t blocks =
      (per_die * g_.slots_per_program + g_.slots_per_block - 1) / g_.slots_per_block;
  return blocks < g_.blocks_per_die;
}

void Ftl::PlaceProgramUnitCounts() {
  // Place() slots_per_program times in counts-only mode, at once: a unit
  // never straddles blocks (FullFillFits), so one host block takes it all.
  if (!FrontierHasHostBlock()) {  // unreachable where FullFillFits
    for (std::uint32_t i = 0; i < g_.slots_per_program; ++i) Place(0);
    return;
  }
  Die& d = dies_[frontier_die_];
  counters_.host_slots_written += g_.slots_per_program;
  d.host_ptr += g_.slots_per_program;
  blocks_[d.host_block].key += std::uint64_t{g_.slots_per_program} * kValidOne;
  pending_host_ += g_.slots_per_program;
  DispatchHostProgram(frontier_die_);
}

void Ftl::PreconditionFull() {
  const std::uint64_t n = g_.exported_slots;
  if (listener_ != nullptr || !FullFillFits()) {
    for (std::uint64_t lpn = 0; lpn < n; ++lpn) Write(lpn);
    return;
  }
  counts_only_ = true;
  const std::uint64_t whole = n / g_.slots_per_program * g_.slots_per_program;
  for (std::uint64_t lpn = 0; lpn < whole; lpn += g_.slots_per_program) PlaceProgramUnitCounts();
  for (std::uint64_t lpn = whole; lpn < n; ++lpn) Place(lpn);
  counts_only_ = false;
  mapped_slots_ = n;
  full_fill_ = std::make_unique<FullFill>(g_);
  l2p_.SetAllImplicit(full_fill_.get());
  implicit_p2l_.assign(blocks_.size(), false);
  for (std::uint32_t b = 0; b < blocks_.size(); ++b) {
    if (blocks_[b].p2l != nullptr) implicit_p2l_[b] = true;
  }
  // The open host blocks are written slot by slot from here on: out now.
  for (const Die& d : dies_) {
    if (d.host_block != kNoBlock) MaterializeP2l(d.host_block);
  }
}

void Ftl::MaterializeP2l(std::uint32_t block) {
  std::uint32_t* p2l = blocks_[block].p2l;
  const std::uint32_t base = block * g_.slots_per_block;
  for (std::uint32_t s = 0; s < g_.slots_per_block; ++s) p2l[s] = full_fill_->LpnAt(base + s);
  implicit_p2l_[block] = false;
}

void Ftl::AssignUnits(Rng& rng) {
  // Each block's valid units go to a uniformly random subset of its written
  // slots (selection sampling, in slot order); the k-th unit placed overall
  // gets LPN perm(k).
  l2p_.MakeAllDense();
  std::vector<std::uint32_t> written(blocks_.size(), g_.slots_per_block);
  for (Die& d : dies_) {
    if (d.host_block != kNoBlock) written[d.host_block] = d.host_ptr;
    if (d.gc_block != kNoBlock) written[d.gc_block] = d.gc_ptr;
    d.victim_cursor = 0;
    d.victim_last_page = kNoBlock;
  }
  const RandomPermutation perm(g_.exported_slots, rng);
  // The L2P stores would land all over the table (a cache and TLB miss each
  // on a large drive): (lpn, ppn) pairs are staged per 1/256 of the LPN space
  // and written a bucket at a time, each into a window of 1/256 of the table.
  const std::uint64_t n = g_.exported_slots;
  int bucket_shift = 0;
  while ((n >> bucket_shift) > 256) ++bucket_shift;
  // Pairs per bucket before a flush (at most the LPNs a bucket covers).
  const std::size_t staged_max = std::min<std::size_t>(2048, std::size_t{1} << bucket_shift);
  struct Pair {
    std::uint32_t lpn, ppn;
  };
  const std::size_t buckets = static_cast<std::size_t>((n - 1) >> bucket_shift) + 1;
  std::vector<Pair> staged(buckets * staged_max);
  std::vector<std::uint32_t> fill(buckets, 0);
  auto flush = [&](std::size_t bucket) {
    const Pair* pairs = &staged[bucket * staged_max];
    const std::uint32_t count = fill[bucket];
    constexpr std::uint32_t kAhead = 16;
    for (std::uint32_t i = 0; i < count && i < kAhead; ++i) l2p_.Prefetch(pairs[i].lpn);
    for (std::uint32_t i = 0; i < count; ++i) {
      if (i + kAhead < count) l2p_.Prefetch(pairs[i + kAhead].lpn);
      l2p_.Set(pairs[i].lpn, pairs[i].ppn);
    }
    fill[bucket] = 0;
  };
  std::uint64_t k = 0;
  for (std::uint32_t b = 0; b < blocks_.size(); ++b) {
    std::uint32_t* p2l = blocks_[b].p2l;
    if (p2l == nullptr) continue;
    const std::uint32_t slots = written[b];
    std::uint32_t need = Valid(blocks_[b].key);
    const std::uint32_t base = b * g_.slots_per_block;
    for (std::uint32_t s = 0; s < slots; ++s) {
      if (need == slots - s || (need != 0 && rng.Below(slots - s) < need)) {
        const auto lpn = static_cast<std::uint32_t>(perm(k++));
        p2l[s] = lpn;
        const std::size_t bucket = lpn >> bucket_shift;
        staged[bucket * staged_max + fill[bucket]] = {lpn, base + s};
        if (++fill[bucket] == staged_max) flush(bucket);
        --need;
      } else {
        p2l[s] = kUnmapped;
      }
    }
  }
  for (std::size_t bucket = 0; bucket < buckets; ++bucket) flush(bucket);
}

void Ftl::DispatchHostProgram(std::uint32_t die) {
  Die& d = dies_[die];
  const std::uint32_t first = per_program_.Div(d.host_ptr - 1) * g_.slots_per_program;
  const std::uint32_t slots = d.host_ptr - first;
  counters_.nand_slots_programmed += slots;
  const std::uint32_t block = d.host_block;
  const std::uint32_t host_slots = pending_host_;
  pending_host_ = 0;
  if (d.host_ptr == g_.slots_per_block) {
    CloseBlock(block);
    d.host_block = kNoBlock;
  }
  if (listener_ != nullptr) {
    listener_->OnHostProgram(die, block, first, slots, host_slots);
    frontier_die_ = listener_->NextHostDie(die, g_.dies);
  } else {
    frontier_die_ = (die + 1) % g_.dies;
  }
  // Incremental GC, paced by how far the die is below the background mark.
  const auto free = static_cast<std::uint32_t>(d.free.size());
  if (free < g_.gc_background_free_blocks) {
    CollectStep(die, g_.slots_per_program * (g_.gc_background_free_blocks - free));
  }
}

void Ftl::FlushPending() {
  if (pending_host_ == 0) return;
  Die& d = dies_[frontier_die_];
  std::uint32_t* p2l = P2l(d.host_block);
  while (per_program_.Mod(d.host_ptr) != 0) {
    p2l[d.host_ptr++] = kUnmapped;
    ++counters_.padding_slots;
  }
  DispatchHostProgram(frontier_die_);
}

bool Ftl::IsPendingHost(std::uint32_t ppn) const {
  if (pending_host_ == 0) return false;
  const Die& d = dies_[frontier_die_];
  if (per_block_.Div(ppn) != d.host_block) return false;
  const std::uint32_t slot = ppn - d.host_block * g_.slots_per_block;
  return slot >= d.host_ptr - pending_host_ && slot < d.host_ptr;
}

void Ftl::Trim(std::uint64_t lpn) {
  const std::uint32_t old = l2p_.Get(lpn);
  if (old == kUnmapped) return;
  Invalidate(old);
  l2p_.Set(lpn, kUnmapped);
  --mapped_slots_;
  ++counters_.trimmed_slots;
}

inline bool Ftl::GcPlace(std::uint32_t die, std::uint32_t lpn) {
  Die& d = dies_[die];
  if (d.gc_block == kNoBlock) {
    d.gc_block = AllocateBlock(die);
    if (d.gc_block == kNoBlock) return false;
    d.gc_ptr = 0;
  }
  const std::uint32_t slot = d.gc_ptr++;
  Block& blk = blocks_[d.gc_block];
  blk.key += kValidOne;
  if (!counts_only_) {
    blk.p2l[slot] = lpn;
    l2p_.Set(lpn, d.gc_block * g_.slots_per_block + slot);
  }
  ++counters_.gc_slots_moved;
  if (per_program_.Mod(d.gc_ptr) == 0) {
    counters_.nand_slots_programmed += g_.slots_per_program;
    const std::uint32_t pages = d.gc_pages_read;
    d.gc_pages_read = 0;
    if (listener_ != nullptr) listener_->OnGcProgram(die, pages);
  }
  if (d.gc_ptr == g_.slots_per_block) {
    CloseBlock(d.gc_block);
    d.gc_block = kNoBlock;
  }
  return true;
}

std::uint32_t Ftl::GcPlaceCounts(std::uint32_t die, std::uint32_t units) {
  // GcPlace() `units` times, a block at a time (counts-only mode).
  Die& d = dies_[die];
  std::uint32_t placed = 0;
  while (placed < units) {
    if (d.gc_block == kNoBlock) {
      d.gc_block = AllocateBlock(die);
      if (d.gc_block == kNoBlock) break;
      d.gc_ptr = 0;
    }
    const std::uint32_t take = std::min(units - placed, g_.slots_per_block - d.gc_ptr);
    const std::uint32_t programs = per_program_.Div(d.gc_ptr + take) - per_program_.Div(d.gc_ptr);
    d.gc_ptr += take;
    blocks_[d.gc_block].key += take * kValidOne;
    counters_.gc_slots_moved += take;
    counters_.nand_slots_programmed += std::uint64_t{programs} * g_.slots_per_program;
    if (programs != 0) d.gc_pages_read = 0;
    placed += take;
    if (d.gc_ptr == g_.slots_per_block) {
      CloseBlock(d.gc_block);
      d.gc_block = kNoBlock;
    }
  }
  return placed;
}

bool Ftl::CollectOne(std::uint32_t die) {
  do {
    if (!CollectStep(die, 0xFFFFFFFFu)) return false;
  } while (dies_[die].victim != kNoBlock);
  return true;
}

std::uint32_t Ftl::FindVictim(std::uint32_t die) const {
  const Die& d = dies_[die];
  const std::uint64_t* group_min = &group_min_[std::size_t{die} * groups_per_die_];
  std::uint32_t group = 0;
  for (std::uint32_t i = 1; i < groups_per_die_; ++i) {
    if (group_min[i] < group_min[group]) group = i;
  }
  const std::uint64_t key = group_min[group];
  if ((key & kNotClosed) != 0) return kNoBlock;  // no closed block
  const std::uint32_t valid = Valid(key);
  if (valid >= g_.slots_per_block) return kNoBlock;  // only full blocks: no gain
  const std::uint32_t gc_room = d.gc_block == kNoBlock ? 0 : g_.slots_per_block - d.gc_ptr;
  if (d.free.empty() && gc_room < valid) return kNoBlock;
  std::uint32_t b = die * g_.blocks_per_die + (group << kGroupShift);
  while (blocks_[b].key != key) ++b;  // keys of closed blocks are unique
  return b;
}

std::uint32_t Ftl::PickVictim(std::uint32_t die) {
  const std::uint32_t b = FindVictim(die);
  if (b == kNoBlock) return kNoBlock;
  blocks_[b].key |= kNotClosed;
  RecomputeGroupMin(b);
  return b;
}

bool Ftl::CollectStep(std::uint32_t die, std::uint32_t max_moves, bool erase_alone) {
  Die& d = dies_[die];
  if (d.victim == kNoBlock) {
    d.victim = PickVictim(die);
    if (d.victim == kNoBlock) return false;
    d.victim_cursor = 0;
    d.victim_last_page = kNoBlock;
  }
  const std::uint32_t victim = d.victim;
  P2l(victim);
  Block& vblk = blocks_[victim];
  if (counts_only_) {  // unit positions are not tracked: move counts only
    std::uint32_t moved = 0;
    while (Valid(vblk.key) > 0) {
      if (moved >= max_moves) return true;
      const std::uint32_t placed = GcPlaceCounts(die, std::min(Valid(vblk.key), max_moves - moved));
      if (placed == 0) return moved > 0;
      vblk.key -= placed * kValidOne;
      moved += placed;
    }
    d.victim_cursor = g_.slots_per_block;
    if (erase_alone && moved > 0) return true;
  }
  const std::uint32_t* p2l = vblk.p2l;
  constexpr std::uint32_t kAhead = 16;  // prefetch the L2P entries of moves to come
  std::uint32_t moved = 0;
  while (d.victim_cursor < g_.slots_per_block && Valid(vblk.key) > 0) {
    if (moved >= max_moves) return true;
    const std::uint32_t slot = d.victim_cursor;
    if (slot + kAhead < g_.slots_per_block && p2l[slot + kAhead] != kUnmapped) {
      l2p_.Prefetch(p2l[slot + kAhead]);
    }
    const std::uint32_t lpn = p2l[slot];
    if (lpn != kUnmapped) {  // still valid: invalidation clears the slot
      const std::uint32_t page = per_page_.Div(slot);
      if (page != d.victim_last_page) {
        ++d.gc_pages_read;
        d.victim_last_page = page;
      }
      if (!GcPlace(die, lpn)) return moved > 0;  // no room: retry later
      vblk.key -= kValidOne;
      ++moved;
    }
    ++d.victim_cursor;
  }
  if (erase_alone && moved > 0) return true;
  vblk.key = kNotClosed;
  p2l_pool_.Free(vblk.p2l);
  vblk.p2l = nullptr;
  d.free.push_back(victim);
  d.victim = kNoBlock;
  ++counters_.gc_runs;
  ++counters_.erases;
  if (listener_ != nullptr) listener_->OnErase(die);
  return true;
}

bool Ftl::CheckConsistency(std::string* error) const {
  auto fail = [error](std::string msg) {
    if (error != nullptr) *error = std::move(msg);
    return false;
  };
  std::vector<std::uint32_t> mapped(blocks_.size(), 0);
  for (std::uint64_t lpn = 0; lpn < g_.exported_slots; ++lpn) {
    const std::uint32_t ppn = l2p_.Get(lpn);
    if (ppn == kUnmapped) continue;
    const std::uint32_t b = per_block_.Div(ppn);
    if (b >= blocks_.size() || blocks_[b].p2l == nullptr) {
      return fail("lpn " + std::to_string(lpn) + " maps into free block " + std::to_string(b));
    }
    const std::uint32_t slot = ppn - b * g_.slots_per_block;
    const bool implicit = !implicit_p2l_.empty() && implicit_p2l_[b];
    if ((implicit ? full_fill_->LpnAt(ppn) : blocks_[b].p2l[slot]) != lpn) {
      return fail("lpn " + std::to_string(lpn) + ": P2L of ppn " + std::to_string(ppn) +
                  " names another unit");
    }
    ++mapped[b];
  }
  for (std::uint32_t b = 0; b < blocks_.size(); ++b) {
    if (Valid(blocks_[b].key) != mapped[b]) {
      return fail("block " + std::to_string(b) + ": valid count " +
                  std::to_string(Valid(blocks_[b].key)) + ", units mapped " +
                  std::to_string(mapped[b]));
    }
  }
  // A group minimum is what FindVictim needs: the smallest key among the
  // group's closed blocks, exactly, or a value with kNotClosed set ("no
  // victim here") when none is closed. Keys of free, open and collected
  // blocks are not tracked: they rise as units are programmed and fall when
  // a victim is erased, with no update; and a group in which no block has
  // closed yet keeps the initial all-ones. Closed keys only fall (Restamp
  // lowers the minimum with them) and a block leaves the closed set only as a
  // victim (PickVictim recomputes), so closed blocks are covered exactly.
  for (std::uint32_t die = 0; die < g_.dies; ++die) {
    for (std::uint32_t grp = 0; grp < groups_per_die_; ++grp) {
      const std::uint32_t first = die * g_.blocks_per_die + (grp << kGroupShift);
      const std::uint32_t end =
          std::min(first + (1u << kGroupShift), (die + 1) * g_.blocks_per_die);
      std::uint64_t closed_min = kNotClosed;  // above every closed key
      for (std::uint32_t b = first; b < end; ++b) {
        if ((blocks_[b].key & kNotClosed) == 0) closed_min = std::min(closed_min, blocks_[b].key);
      }
      const std::uint64_t m = group_min_[die * groups_per_die_ + grp];
      if (closed_min != kNotClosed ? m != closed_min : (m & kNotClosed) == 0) {
        return fail("die " + std::to_string(die) + " group " + std::to_string(grp) +
                    ": stale minimum " + std::to_string(m) + ", smallest closed key " +
                    (closed_min != kNotClosed ? std::to_string(closed_min) : "none"));
      }
    }
  }
  return true;
}

std::vector<std::uint32_t> Ftl::ClosedBlockValidCounts() const {
  std::vector<std::uint32_t> counts;
  for (const Block& b : blocks_) {
    if ((b.key & kNotClosed) == 0) counts.push_back(Valid(b.key));
  }
  return counts;
}

std::uint64_t Ftl::MemoryBytes() const {
  std::uint64_t bytes =
      l2p_.MemoryBytes() + p2l_pool_.MemoryBytes() + blocks_.capacity() * sizeof(Block) +
      group_min_.capacity() * sizeof(std::uint64_t) + dies_.capacity() * sizeof(Die);
  for (const Die& d : dies_) bytes += d.free.capacity() * sizeof(std::uint32_t);
  return bytes;
}

}  // namespace devmodel::internal
