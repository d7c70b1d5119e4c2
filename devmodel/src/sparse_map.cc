#include "sparse_map.h"

#include <algorithm>
#include <cstring>

namespace devmodel::internal {
namespace {

constexpr std::uint64_t kOffsetMask = SparseMap::kRegionSize - 1;

std::uint32_t Count(const std::uint64_t* table) { return static_cast<std::uint32_t>(table[0]); }
int Log2Slots(const std::uint64_t* table) { return static_cast<int>(table[0] >> 32); }

}  // namespace

SparseMap::SparseMap(std::uint64_t size)
    : size_(size),
      regions_((size + kRegionSize - 1) >> kRegionShift, 0),
      dense_pool_(kRegionSize * sizeof(std::uint32_t)) {}

SparseMap::~SparseMap() {
  for (std::uintptr_t e : regions_) {
    if ((e & kTagMask) == kSparseTag) FreeTable(reinterpret_cast<std::uint64_t*>(e & ~kSparseTag));
  }
}

std::uint64_t* SparseMap::NewTable(int log2_slots) {
  const std::size_t slots = std::size_t{1} << log2_slots;
  auto* table = new std::uint64_t[slots + 1];
  table[0] = std::uint64_t{static_cast<std::uint32_t>(log2_slots)} << 32;
  std::memset(table + 1, 0xFF, slots * sizeof(std::uint64_t));
  sparse_bytes_ += (slots + 1) * sizeof(std::uint64_t);
  return table;
}

void SparseMap::FreeTable(std::uint64_t* table) {
  sparse_bytes_ -= ((std::uint64_t{1} << Log2Slots(table)) + 1) * sizeof(std::uint64_t);
  delete[] table;
}

std::uint32_t SparseMap::GetSparse(std::uintptr_t e, std::uint64_t index) const {
  const auto* table = reinterpret_cast<const std::uint64_t*>(e & ~kSparseTag);
  const int log2 = Log2Slots(table);
  const std::uint64_t mask = (std::uint64_t{1} << log2) - 1;
  const auto offset = static_cast<std::uint32_t>(index & kOffsetMask);
  for (std::uint64_t s = SlotOf(offset, log2);; s = (s + 1) & mask) {
    const std::uint64_t word = table[1 + s];
    if (word == kEmptySlot) return kUnmapped;
    if (word >> 32 == offset) return static_cast<std::uint32_t>(word);
  }
}

std::uint32_t* SparseMap::MakeDense(std::uint64_t region) {
  auto* leaf = static_cast<std::uint32_t*>(dense_pool_.Allocate());
  std::memset(leaf, 0xFF, kRegionSize * sizeof(std::uint32_t));
  const std::uintptr_t e = regions_[region];
  if (e == kImplicitTag) {
    const std::uint64_t first = region << kRegionShift;
    const std::uint64_t count = std::min(kRegionSize, size_ - first);
    for (std::uint64_t i = 0; i < count; ++i) {
      leaf[i] = implicit_->At(first + i);
    }
    --implicit_regions_;
  } else if ((e & kSparseTag) != 0) {
    auto* table = reinterpret_cast<std::uint64_t*>(e & ~kSparseTag);
    const std::uint64_t slots = std::uint64_t{1} << Log2Slots(table);
    for (std::uint64_t s = 0; s < slots; ++s) {
      const std::uint64_t word = table[1 + s];
      if (word != kEmptySlot) leaf[word >> 32] = static_cast<std::uint32_t>(word);
    }
    FreeTable(table);
    --sparse_regions_;
  }
  regions_[region] = reinterpret_cast<std::uintptr_t>(leaf);
  ++dense_regions_;
  return leaf;
}

void SparseMap::MakeAllDense() {
  for (std::uint64_t r = 0; r < regions_.size(); ++r) {
    const std::uintptr_t e = regions_[r];
    if (e == 0 || (e & kTagMask) != 0) MakeDense(r);
  }
}

void SparseMap::SetAllImplicit(const ImplicitEntries* entries) {
  implicit_ = entries;
  for (std::uintptr_t& e : regions_) e = kImplicitTag;
  implicit_regions_ = regions_.size();
}

void SparseMap::SetSlow(std::uint64_t index, std::uint32_t value) {
  const std::uint64_t region = index >> kRegionShift;
  const auto offset = static_cast<std::uint32_t>(index & kOffsetMask);
  std::uintptr_t e = regions_[region];
  if (e == kImplicitTag) {
    MakeDense(region)[offset] = value;
    return;
  }
  if (e == 0) {
    if (value == kUnmapped) return;
    e = reinterpret_cast<std::uintptr_t>(NewTable(kMinLog2Slots)) | kSparseTag;
    regions_[region] = e;
    ++sparse_regions_;
  }
  auto* table = reinterpret_cast<std::uint64_t*>(e & ~kSparseTag);
  int log2 = Log2Slots(table);
  std::uint64_t mask = (std::uint64_t{1} << log2) - 1;
  std::uint64_t s = SlotOf(offset, log2);
  while (table[1 + s] != kEmptySlot && table[1 + s] >> 32 != offset) s = (s + 1) & mask;

  if (table[1 + s] != kEmptySlot) {  // present
    if (value != kUnmapped) {
      table[1 + s] = std::uint64_t{offset} << 32 | value;
      return;
    }
    // Remove by backward shift: move later members of the probe run into the
    // hole when their home slot does not lie cyclically in (hole, member].
    std::uint64_t hole = s;
    for (std::uint64_t j = (s + 1) & mask; table[1 + j] != kEmptySlot; j = (j + 1) & mask) {
      const std::uint64_t home = SlotOf(static_cast<std::uint32_t>(table[1 + j] >> 32), log2);
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        table[1 + hole] = table[1 + j];
        hole = j;
      }
    }
    table[1 + hole] = kEmptySlot;
    const std::uint32_t count = Count(table) - 1;
    if (count == 0) {
      FreeTable(table);
      regions_[region] = 0;
      --sparse_regions_;
      return;
    }
    table[0] = std::uint64_t{static_cast<std::uint32_t>(log2)} << 32 | count;
    return;
  }
  if (value == kUnmapped) return;  // absent already

  const std::uint32_t count = Count(table) + 1;
  if (count > kDenseThreshold) {
    MakeDense(region)[offset] = value;
    return;
  }
  if (2 * count > (std::uint32_t{1} << log2)) {  // keep load <= 1/2
    std::uint64_t* grown = NewTable(log2 + 1);
    const int glog2 = log2 + 1;
    const std::uint64_t gmask = (std::uint64_t{1} << glog2) - 1;
    for (std::uint64_t j = 0; j <= mask; ++j) {
      const std::uint64_t word = table[1 + j];
      if (word == kEmptySlot) continue;
      std::uint64_t t = SlotOf(static_cast<std::uint32_t>(word >> 32), glog2);
      while (grown[1 + t] != kEmptySlot) t = (t + 1) & gmask;
      grown[1 + t] = word;
    }
    FreeTable(table);
    table = grown;
    log2 = glog2;
    mask = gmask;
    regions_[region] = reinterpret_cast<std::uintptr_t>(table) | kSparseTag;
    s = SlotOf(offset, log2);
    while (table[1 + s] != kEmptySlot) s = (s + 1) & mask;
  }
  table[1 + s] = std::uint64_t{offset} << 32 | value;
  table[0] = std::uint64_t{static_cast<std::uint32_t>(log2)} << 32 | count;
}

std::uint64_t SparseMap::MemoryBytes() const {
  // Sparse tables come from malloc: count its 16-byte chunk header too.
  return regions_.capacity() * sizeof(std::uintptr_t) + dense_pool_.MemoryBytes() + sparse_bytes_ +
         sparse_regions_ * 16;
}

}  // namespace devmodel::internal
