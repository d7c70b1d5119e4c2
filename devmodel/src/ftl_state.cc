// Ftl::SaveState / LoadState: the FTL state a precondition leaves, as bytes
// for a state file (state_cache.h), and back. Kept apart from ftl.cc, which
// holds the FTL's algorithm.
#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "ftl.h"

namespace devmodel::internal {
namespace {

void Put(std::string* out, std::uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }

// Reads 8-byte words; past the end it returns 0 and remembers the overrun.
class WordReader {
 public:
  WordReader(const char* p, std::size_t bytes) : p_(p), end_(p + bytes) {}
  std::uint64_t Get() {
    if (end_ - p_ < 8) {
      overrun_ = true;
      return 0;
    }
    std::uint64_t v;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    return v;
  }
  bool AtEnd() const { return !overrun_ && p_ == end_; }
  bool overrun() const { return overrun_; }

 private:
  const char* p_;
  const char* end_;
  bool overrun_ = false;
};

}  // namespace

bool Ftl::CanSaveState() const {
  return full_fill_ == nullptr && implicit_p2l_.empty() && !counts_only_ &&
         l2p_.dense_regions() == l2p_.regions();
}

void Ftl::SaveState(std::string* meta) const {
  for (std::uint64_t v : {std::uint64_t{g_.dies}, std::uint64_t{g_.blocks_per_die},
                          std::uint64_t{g_.slots_per_block}, std::uint64_t{g_.slots_per_program},
                          std::uint64_t{g_.slots_per_page}, g_.exported_slots,
                          std::uint64_t{g_.gc_foreground_free_blocks},
                          std::uint64_t{g_.gc_background_free_blocks}}) {
    Put(meta, v);
  }
  Put(meta, clock_);
  Put(meta, frontier_die_);
  Put(meta, pending_host_);
  Put(meta, mapped_slots_);
  const FtlCounters& c = counters_;
  for (std::uint64_t v : {c.host_slots_written, c.nand_slots_programmed, c.padding_slots,
                          c.gc_runs, c.gc_slots_moved, c.erases, c.trimmed_slots,
                          c.dropped_writes}) {
    Put(meta, v);
  }
  Put(meta, p2l_pool_.items_carved());
  Put(meta, p2l_pool_.free_capacity());
  for (const Block& b : blocks_) Put(meta, b.key);
  for (std::uint64_t m : group_min_) Put(meta, m);
  for (const Die& d : dies_) {
    Put(meta, d.free.size());
    for (std::uint32_t b : d.free) Put(meta, b);
    for (std::uint64_t v : {d.host_block, d.host_ptr, d.gc_block, d.gc_ptr, d.gc_pages_read,
                            d.victim, d.victim_cursor, d.victim_last_page}) {
      Put(meta, v);
    }
  }
}

bool Ftl::LoadState(const char* meta, std::size_t meta_bytes, const std::uint32_t* l2p,
                    std::string* error) {
  return LoadStateWith(
      meta, meta_bytes, [l2p](std::uint64_t lpn) { return l2p[lpn]; }, l2p, error);
}

void Ftl::SaveFullState(StateWriter* out) const {
  std::string meta;
  SaveState(&meta);
  out->PutBytes(meta);
  std::vector<std::uint64_t> used;
  for (std::uint64_t r = 0; r < l2p_.regions(); ++r) {
    const std::uint64_t first = r << SparseMap::kRegionShift;
    const std::uint64_t end = std::min(first + SparseMap::kRegionSize, g_.exported_slots);
    for (std::uint64_t lpn = first; lpn < end; ++lpn) {
      if (l2p_.Get(lpn) != kUnmapped) {
        used.push_back(r);
        break;
      }
    }
  }
  out->Put(used.size());
  std::string entries;
  for (std::uint64_t r : used) {
    out->Put(r);
    const std::uint64_t first = r << SparseMap::kRegionShift;
    const std::uint64_t end = std::min(first + SparseMap::kRegionSize, g_.exported_slots);
    entries.clear();
    for (std::uint64_t lpn = first; lpn < end; ++lpn) {
      const std::uint32_t ppn = l2p_.Get(lpn);
      entries.append(reinterpret_cast<const char*>(&ppn), 4);
    }
    out->PutBytes(entries);
  }
}

bool Ftl::LoadFullState(StateReader* in, std::string* error) {
  const std::string_view meta = in->GetBytes();
  // Per L2P region, its saved entries (in the reader's buffer) or null.
  std::vector<const char*> regions(l2p_.regions(), nullptr);
  const std::uint64_t used = in->GetCount(2);
  for (std::uint64_t k = 0; k < used; ++k) {
    const std::uint64_t r = in->Get();
    const std::string_view entries = in->GetBytes();
    if (!in->ok() || r >= regions.size() || regions[r] != nullptr) {
      if (error != nullptr) *error = "bad L2P region";
      return false;
    }
    const std::uint64_t first = r << SparseMap::kRegionShift;
    const std::uint64_t count = std::min(SparseMap::kRegionSize, g_.exported_slots - first);
    if (entries.size() != count * 4) {
      if (error != nullptr) *error = "L2P region size differs";
      return false;
    }
    regions[r] = entries.data();
  }
  if (!in->ok()) {
    if (error != nullptr) *error = "truncated";
    return false;
  }
  auto get = [&regions](std::uint64_t lpn) {
    const char* p = regions[lpn >> SparseMap::kRegionShift];
    if (p == nullptr) return kUnmapped;
    std::uint32_t ppn;
    std::memcpy(&ppn, p + (lpn & (SparseMap::kRegionSize - 1)) * 4, 4);
    return ppn;
  };
  return LoadStateWith(meta.data(), meta.size(), get, nullptr, error);
}

template <typename GetL2p>
bool Ftl::LoadStateWith(const char* meta, std::size_t meta_bytes, const GetL2p& get,
                        const std::uint32_t* dense_l2p, std::string* error) {
  auto fail = [error](const std::string& why) {
    if (error != nullptr) *error = why;
    return false;
  };
  WordReader in(meta, meta_bytes);
  for (std::uint64_t want : {std::uint64_t{g_.dies}, std::uint64_t{g_.blocks_per_die},
                             std::uint64_t{g_.slots_per_block},
                             std::uint64_t{g_.slots_per_program}, std::uint64_t{g_.slots_per_page},
                             g_.exported_slots, std::uint64_t{g_.gc_foreground_free_blocks},
                             std::uint64_t{g_.gc_background_free_blocks}}) {
    if (in.Get() != want) return fail("geometry differs from the drive's");
  }
  const std::uint64_t clock = in.Get();
  const std::uint64_t frontier = in.Get();
  const std::uint64_t pending = in.Get();
  const std::uint64_t mapped = in.Get();
  FtlCounters c;
  for (std::uint64_t* v : {&c.host_slots_written, &c.nand_slots_programmed, &c.padding_slots,
                           &c.gc_runs, &c.gc_slots_moved, &c.erases, &c.trimmed_slots,
                           &c.dropped_writes}) {
    *v = in.Get();
  }
  std::uint64_t carved = in.Get();
  std::uint64_t free_capacity = in.Get();
  const std::size_t nblocks = blocks_.size();
  std::vector<std::uint64_t> keys(nblocks);
  for (std::uint64_t& k : keys) k = in.Get();
  std::vector<std::uint64_t> group_min(group_min_.size());
  for (std::uint64_t& m : group_min) m = in.Get();
  std::vector<Die> dies(g_.dies);
  std::vector<std::uint8_t> is_free(nblocks, 0);  // bytes: read once per unit below
  std::uint64_t free_total = 0;
  for (std::uint32_t die = 0; die < g_.dies; ++die) {
    Die& d = dies[die];
    const std::uint64_t count = in.Get();
    if (in.overrun() || count > g_.blocks_per_die) return fail("bad free list");
    d.free.reserve(g_.blocks_per_die);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t b = in.Get();
      if (b / g_.blocks_per_die != die || is_free[b]) return fail("bad free block");
      is_free[b] = 1;
      d.free.push_back(static_cast<std::uint32_t>(b));
    }
    free_total += count;
    std::uint32_t* fields[] = {&d.host_block, &d.host_ptr,      &d.gc_block,
                               &d.gc_ptr,     &d.gc_pages_read, &d.victim,
                               &d.victim_cursor, &d.victim_last_page};
    for (std::uint32_t* f : fields) {
      const std::uint64_t v = in.Get();
      if (v > 0xFFFFFFFFu) return fail("bad die field");
      *f = static_cast<std::uint32_t>(v);
    }
    for (std::uint32_t b : {d.host_block, d.gc_block, d.victim}) {
      if (b != kNoBlock && (b / g_.blocks_per_die != die || is_free[b])) {
        return fail("die " + std::to_string(die) + " names a free or foreign block");
      }
    }
    if (d.host_ptr > g_.slots_per_block || d.gc_ptr > g_.slots_per_block ||
        d.victim_cursor > g_.slots_per_block) {
      return fail("die " + std::to_string(die) + ": a pointer past its block");
    }
  }
  if (!in.AtEnd()) return fail("metadata size differs");
  if (frontier >= g_.dies || pending > g_.slots_per_program || mapped > g_.exported_slots ||
      clock > kStampMask) {
    return fail("bad FTL scalars");
  }
  const std::uint64_t in_use = nblocks - free_total;
  if (dense_l2p == nullptr && carved < in_use) {
    // A drive in use whose blocks' P2L arrays were still implicit (a full
    // precondition's) carved fewer: every block in use gets one now.
    free_capacity += in_use - carved;
    carved = in_use;
  }
  if (carved < in_use || free_capacity < carved - in_use) return fail("bad pool sizes");
  for (std::size_t b = 0; b < nblocks; ++b) {
    if (is_free[b] && keys[b] != kNotClosed) return fail("a free block with a key");
  }
  // Every mapped unit lies in a block in use, and the units per block match
  // the valid counts (what CheckConsistency checks, on the file's data).
  const std::uint64_t total_slots = std::uint64_t{nblocks} * g_.slots_per_block;
  std::vector<std::uint32_t> units(nblocks, 0);
  std::uint64_t mapped_seen = 0;
  for (std::uint64_t lpn = 0; lpn < g_.exported_slots; ++lpn) {
    const std::uint32_t ppn = get(lpn);
    if (ppn == kUnmapped) continue;
    if (ppn >= total_slots) return fail("an L2P entry past the drive");
    const std::uint32_t b = per_block_.Div(ppn);
    if (is_free[b]) return fail("an L2P entry in a free block");
    ++units[b];
    ++mapped_seen;
  }
  if (mapped_seen != mapped) return fail("mapped units differ from the L2P's");
  for (std::size_t b = 0; b < nblocks; ++b) {
    if (units[b] != Valid(keys[b])) return fail("valid counts differ from the L2P's");
  }

  // Checked: commit.
  clock_ = clock;
  frontier_die_ = static_cast<std::uint32_t>(frontier);
  pending_host_ = static_cast<std::uint32_t>(pending);
  mapped_slots_ = mapped;
  counters_ = c;
  group_min_ = std::move(group_min);
  dies_ = std::move(dies);
  // The P2L pool carves as many items as the replay's did at its peak and
  // keeps the rest on a free list of the same capacity (same MemoryBytes).
  std::vector<void*> items(carved);
  for (void*& item : items) item = p2l_pool_.Allocate();
  p2l_pool_.ReserveFree(free_capacity);
  std::size_t next = 0;
  for (std::size_t b = 0; b < nblocks; ++b) {
    blocks_[b].key = keys[b];
    if (!is_free[b]) {
      blocks_[b].p2l = static_cast<std::uint32_t*>(items[next++]);
      std::memset(blocks_[b].p2l, 0xFF, std::size_t{g_.slots_per_block} * sizeof(std::uint32_t));
    }
  }
  for (std::size_t i = next; i < items.size(); ++i) p2l_pool_.Free(items[i]);
  if (dense_l2p != nullptr) {
    l2p_.MakeAllDense();
    for (std::uint64_t r = 0; r < l2p_.regions(); ++r) {
      const std::uint64_t first = r << SparseMap::kRegionShift;
      const std::uint64_t count = std::min(SparseMap::kRegionSize, g_.exported_slots - first);
      std::memcpy(l2p_.DenseRegion(r), dense_l2p + first, count * sizeof(std::uint32_t));
    }
  } else {
    for (std::uint64_t lpn = 0; lpn < g_.exported_slots; ++lpn) {
      const std::uint32_t ppn = get(lpn);
      if (ppn != kUnmapped) l2p_.Set(lpn, ppn);
    }
  }
  // P2L from the L2P: (ppn, lpn) pairs staged per 1/2048 of the physical
  // slots and written a bucket at a time (prefetched), so that the stores
  // stay within a window of the P2L arrays instead of missing the cache at
  // every unit.
  int shift = 0;
  while ((total_slots >> shift) > 2048) ++shift;
  const std::size_t buckets = static_cast<std::size_t>((total_slots - 1) >> shift) + 1;
  constexpr std::size_t kStaged = 512;
  std::vector<std::uint64_t> staged(buckets * kStaged);  // ppn << 32 | lpn
  std::vector<std::uint32_t> fill(buckets, 0);
  auto slot_of = [this](std::uint64_t pair) {
    const auto ppn = static_cast<std::uint32_t>(pair >> 32);
    const std::uint32_t b = per_block_.Div(ppn);
    return blocks_[b].p2l + (ppn - b * g_.slots_per_block);
  };
  auto flush = [&](std::size_t bucket) {
    const std::uint64_t* pairs = &staged[bucket * kStaged];
    const std::uint32_t count = fill[bucket];
    constexpr std::uint32_t kAhead = 16;
    for (std::uint32_t i = 0; i < count && i < kAhead; ++i) __builtin_prefetch(slot_of(pairs[i]), 1);
    for (std::uint32_t i = 0; i < count; ++i) {
      if (i + kAhead < count) __builtin_prefetch(slot_of(pairs[i + kAhead]), 1);
      *slot_of(pairs[i]) = static_cast<std::uint32_t>(pairs[i]);
    }
    fill[bucket] = 0;
  };
  for (std::uint64_t lpn = 0; lpn < g_.exported_slots; ++lpn) {
    const std::uint32_t ppn = get(lpn);
    if (ppn == kUnmapped) continue;
    const std::size_t bucket = ppn >> shift;
    staged[bucket * kStaged + fill[bucket]] = std::uint64_t{ppn} << 32 | lpn;
    if (++fill[bucket] == kStaged) flush(bucket);
  }
  for (std::size_t bucket = 0; bucket < buckets; ++bucket) flush(bucket);
  return true;
}

}  // namespace devmodel::internal
