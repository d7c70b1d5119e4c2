#include "ftl.h"

#include <algorithm>
#include <cstring>

namespace devmodel::internal {
namespace {
constexpr std::uint8_t kFree = 0, kOpen = 1, kClosed = 2, kVictim = 3;
}  // namespace

Ftl::Ftl(const FtlGeometry& geometry, FtlListener* listener)
    : g_(geometry),
      listener_(listener),
      l2p_(geometry.exported_slots),
      blocks_(static_cast<std::size_t>(geometry.dies) * geometry.blocks_per_die),
      dies_(geometry.dies) {
  for (std::uint32_t d = 0; d < g_.dies; ++d) {
    Die& die = dies_[d];
    die.bucket.assign(g_.slots_per_block + 1, -1);
    die.min_bucket = g_.slots_per_block + 1;
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
  blk.state = kOpen;
  blk.valid = 0;
  if (!free_slabs_.empty()) {
    blk.slab = free_slabs_.back();
    free_slabs_.pop_back();
  } else {
    blk.slab = static_cast<std::uint32_t>(slabs_.size());
    slabs_.emplace_back(new std::uint32_t[g_.slots_per_block]);
  }
  return b;
}

void Ftl::BucketInsert(std::uint32_t block) {
  Block& blk = blocks_[block];
  Die& d = dies_[block / g_.blocks_per_die];
  const std::int32_t head = d.bucket[blk.valid];
  blk.prev = -1;
  blk.next = head;
  if (head >= 0) blocks_[head].prev = static_cast<std::int32_t>(block);
  d.bucket[blk.valid] = static_cast<std::int32_t>(block);
  d.min_bucket = std::min(d.min_bucket, blk.valid);
}

void Ftl::BucketRemove(std::uint32_t block) {
  Block& blk = blocks_[block];
  if (blk.prev >= 0) {
    blocks_[blk.prev].next = blk.next;
  } else {
    dies_[block / g_.blocks_per_die].bucket[blk.valid] = blk.next;
  }
  if (blk.next >= 0) blocks_[blk.next].prev = blk.prev;
  blk.prev = blk.next = -1;
}

void Ftl::CloseBlock(std::uint32_t block) {
  blocks_[block].state = kClosed;
  BucketInsert(block);
}

void Ftl::Invalidate(std::uint32_t ppn) {
  const std::uint32_t b = ppn / g_.slots_per_block;
  Block& blk = blocks_[b];
  if (blk.state == kClosed) {
    BucketRemove(b);
    --blk.valid;
    BucketInsert(b);
  } else {
    --blk.valid;
  }
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
  const std::uint32_t old = l2p_.Get(lpn);
  if (old != kUnmapped) Invalidate(old);
  ++counters_.host_slots_written;
  for (std::uint32_t tries = 0;; ++tries) {
    if (dies_[frontier_die_].host_block != kNoBlock || OpenHostBlock(frontier_die_)) break;
    if (tries + 1 >= g_.dies) {
      ++counters_.dropped_writes;  // unreachable with validated geometry
      l2p_.Set(lpn, kUnmapped);
      return;
    }
    frontier_die_ = (frontier_die_ + 1) % g_.dies;
  }
  const std::uint32_t die = frontier_die_;
  Die& d = dies_[die];
  const std::uint32_t slot = d.host_ptr++;
  P2l(d.host_block)[slot] = static_cast<std::uint32_t>(lpn);
  ++blocks_[d.host_block].valid;
  l2p_.Set(lpn, d.host_block * g_.slots_per_block + slot);
  ++pending_host_;
  if (d.host_ptr % g_.slots_per_program == 0) DispatchHostProgram(die);
}

void Ftl::DispatchHostProgram(std::uint32_t die) {
  Die& d = dies_[die];
  const std::uint32_t first = (d.host_ptr - 1) / g_.slots_per_program * g_.slots_per_program;
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
  while (d.host_ptr % g_.slots_per_program != 0) {
    p2l[d.host_ptr++] = kUnmapped;
    ++counters_.padding_slots;
  }
  DispatchHostProgram(frontier_die_);
}

bool Ftl::IsPendingHost(std::uint32_t ppn) const {
  if (pending_host_ == 0) return false;
  const Die& d = dies_[frontier_die_];
  if (ppn / g_.slots_per_block != d.host_block) return false;
  const std::uint32_t slot = ppn % g_.slots_per_block;
  return slot >= d.host_ptr - pending_host_ && slot < d.host_ptr;
}

void Ftl::Trim(std::uint64_t lpn) {
  const std::uint32_t old = l2p_.Get(lpn);
  if (old == kUnmapped) return;
  Invalidate(old);
  l2p_.Set(lpn, kUnmapped);
  ++counters_.trimmed_slots;
}

bool Ftl::GcPlace(std::uint32_t die, std::uint32_t lpn) {
  Die& d = dies_[die];
  if (d.gc_block == kNoBlock) {
    d.gc_block = AllocateBlock(die);
    if (d.gc_block == kNoBlock) return false;
    d.gc_ptr = 0;
  }
  const std::uint32_t slot = d.gc_ptr++;
  P2l(d.gc_block)[slot] = lpn;
  ++blocks_[d.gc_block].valid;
  l2p_.Set(lpn, d.gc_block * g_.slots_per_block + slot);
  ++counters_.gc_slots_moved;
  if (d.gc_ptr % g_.slots_per_program == 0) {
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

bool Ftl::CollectOne(std::uint32_t die) {
  do {
    if (!CollectStep(die, 0xFFFFFFFFu)) return false;
  } while (dies_[die].victim != kNoBlock);
  return true;
}

bool Ftl::CollectStep(std::uint32_t die, std::uint32_t max_moves) {
  Die& d = dies_[die];
  if (d.victim == kNoBlock) {
    std::uint32_t v = d.min_bucket;
    while (v < g_.slots_per_block && d.bucket[v] < 0) ++v;
    d.min_bucket = v;
    if (v >= g_.slots_per_block) return false;  // only full blocks: no gain
    const std::uint32_t gc_room = d.gc_block == kNoBlock ? 0 : g_.slots_per_block - d.gc_ptr;
    if (d.free.empty() && gc_room < v) return false;
    d.victim = static_cast<std::uint32_t>(d.bucket[v]);
    BucketRemove(d.victim);
    blocks_[d.victim].state = kVictim;
    d.victim_cursor = 0;
    d.victim_last_page = kNoBlock;
  }
  const std::uint32_t victim = d.victim;
  const std::uint32_t* p2l = P2l(victim);
  const std::uint32_t base = victim * g_.slots_per_block;
  std::uint32_t moved = 0;
  while (d.victim_cursor < g_.slots_per_block && blocks_[victim].valid > 0) {
    if (moved >= max_moves) return true;
    const std::uint32_t slot = d.victim_cursor;
    const std::uint32_t lpn = p2l[slot];
    if (lpn != kUnmapped && l2p_.Get(lpn) == base + slot) {
      const std::uint32_t page = slot / g_.slots_per_page;
      if (page != d.victim_last_page) {
        ++d.gc_pages_read;
        d.victim_last_page = page;
      }
      if (!GcPlace(die, lpn)) return moved > 0;  // no room: retry later
      --blocks_[victim].valid;
      ++moved;
    }
    ++d.victim_cursor;
  }
  Block& blk = blocks_[victim];
  blk.valid = 0;
  blk.state = kFree;
  free_slabs_.push_back(blk.slab);
  blk.slab = kNoBlock;
  d.free.push_back(victim);
  d.victim = kNoBlock;
  ++counters_.gc_runs;
  ++counters_.erases;
  if (listener_ != nullptr) listener_->OnErase(die);
  return true;
}

std::uint64_t Ftl::MemoryBytes() const {
  std::uint64_t bytes = l2p_.MemoryBytes() + blocks_.capacity() * sizeof(Block) +
                        slabs_.size() * (std::uint64_t{g_.slots_per_block} * 4 + sizeof(void*));
  for (const Die& d : dies_) bytes += d.free.capacity() * 4 + d.bucket.capacity() * 4;
  return bytes;
}

}  // namespace devmodel::internal
