// Bookkeeping for the HDD's read-ahead segments, so that a request does not
// scan every segment: each valid segment registers the sector range it can
// serve, [start, reach), and a coarse table (at most 4096 buckets over the
// disk) counts the segments touching each bucket; a request whose buckets
// are all empty cannot concern any segment. Also keeps the replacement
// order: the lowest-numbered invalid segment first, else the least recently
// used one (an intrusive list, O(1) per use). Thread-safety: none.
#ifndef DEVMODEL_SRC_HDD_SEGMENTS_H_
#define DEVMODEL_SRC_HDD_SEGMENTS_H_

#include <cstdint>
#include <vector>

namespace devmodel::internal {

class HddSegmentIndex {
 public:
  // REQUIRES: 1 <= segments <= 65535, total_sectors >= 1.
  HddSegmentIndex(std::uint32_t segments, std::uint64_t total_sectors)
      : start_(segments, 0),
        reach_(segments, 0),
        prev_(segments, kNone),
        next_(segments, kNone),
        invalid_((segments + 63) / 64, 0) {
    while ((total_sectors >> shift_) >= 4096) ++shift_;
    buckets_.assign((total_sectors >> shift_) + 1, 0);
    for (std::uint32_t i = 0; i < segments; ++i) invalid_[i / 64] |= std::uint64_t{1} << (i % 64);
  }

  // Segment i now serves [start, reach); reach == 0 marks it invalid. A
  // segment becoming valid becomes the most recently used.
  void Set(std::uint32_t i, std::uint64_t start, std::uint64_t reach) {
    const bool was_valid = reach_[i] != 0;
    if (was_valid) Count(start_[i], reach_[i], -1);
    start_[i] = start;
    reach_[i] = reach;
    if (reach != 0) Count(start, reach, +1);
    if (was_valid && reach == 0) {
      Unlink(i);
      invalid_[i / 64] |= std::uint64_t{1} << (i % 64);
    } else if (!was_valid && reach != 0) {
      invalid_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
      Append(i);
    }
  }
  // REQUIRES: segment i valid. It becomes the most recently used.
  void Touch(std::uint32_t i) {
    if (i == tail_) return;
    Unlink(i);
    Append(i);
  }

  // Whether some valid segment's range [start, reach) may intersect [lba, end).
  bool MayOverlap(std::uint64_t lba, std::uint64_t end) const {
    for (std::uint64_t b = lba >> shift_; b <= (end - 1) >> shift_; ++b) {
      if (buckets_[b] != 0) return true;
    }
    return false;
  }
  // Exact test for one segment (false when invalid).
  bool Overlaps(std::uint32_t i, std::uint64_t lba, std::uint64_t end) const {
    return lba < reach_[i] && end > start_[i];
  }
  // The segment to reuse: lowest-numbered invalid one, else least recently used.
  std::uint32_t Victim() const {
    for (std::uint32_t w = 0; w < invalid_.size(); ++w) {
      if (invalid_[w] != 0)
        return w * 64 + static_cast<std::uint32_t>(__builtin_ctzll(invalid_[w]));
    }
    return head_;
  }

  // The valid segments, least recently used first (a saved state's order:
  // Set()ting them valid in this order on a fresh index rebuilds it).
  std::vector<std::uint32_t> LruOrder() const {
    std::vector<std::uint32_t> order;
    for (std::uint32_t i = head_; i != kNone; i = next_[i]) order.push_back(i);
    return order;
  }
  std::uint64_t MemoryBytes() const {
    return (start_.capacity() + reach_.capacity() + invalid_.capacity()) * 8 +
           (prev_.capacity() + next_.capacity()) * 4 + buckets_.capacity() * 2;
  }

 private:
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;

  void Count(std::uint64_t start, std::uint64_t reach, int delta) {
    for (std::uint64_t b = start >> shift_; b <= (reach - 1) >> shift_; ++b) {
      buckets_[b] = static_cast<std::uint16_t>(buckets_[b] + delta);
    }
  }
  void Unlink(std::uint32_t i) {
    (prev_[i] == kNone ? head_ : next_[prev_[i]]) = next_[i];
    (next_[i] == kNone ? tail_ : prev_[next_[i]]) = prev_[i];
    prev_[i] = next_[i] = kNone;
  }
  void Append(std::uint32_t i) {
    prev_[i] = tail_;
    next_[i] = kNone;
    (tail_ == kNone ? head_ : next_[tail_]) = i;
    tail_ = i;
  }

  std::vector<std::uint64_t> start_, reach_;
  std::vector<std::uint32_t> prev_, next_;  // LRU list of valid segments
  std::uint32_t head_ = kNone, tail_ = kNone;
  std::vector<std::uint64_t> invalid_;  // bit per segment
  int shift_ = 0;
  std::vector<std::uint16_t> buckets_;  // valid segments touching each bucket
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_HDD_SEGMENTS_H_
