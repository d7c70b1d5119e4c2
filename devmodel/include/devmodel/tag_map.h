// TagMap: per-request state by tag (the SSD's reads in flight, the fault
// wrapper's and the C API's requests awaiting a final deadline) that reuses
// the nodes of erased entries, so that once it has held its most entries an
// insertion allocates nothing: these maps sit on every guest I/O's path.
// Thread-safety: none (as Device).
#ifndef DEVMODEL_TAG_MAP_H_
#define DEVMODEL_TAG_MAP_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace devmodel {

template <typename V>
class TagMap {
 public:
  using Map = std::unordered_map<std::uint64_t, V>;
  using iterator = typename Map::iterator;

  iterator find(std::uint64_t tag) { return map_.find(tag); }
  iterator end() { return map_.end(); }
  std::size_t size() const { return map_.size(); }

  // Sets `tag`'s value, replacing one it has.
  void Put(std::uint64_t tag, const V& value) {
    const iterator it = map_.find(tag);
    if (it != map_.end()) {
      it->second = value;
    } else if (spare_.empty()) {
      map_.emplace(tag, value);
    } else {
      typename Map::node_type node = std::move(spare_.back());
      spare_.pop_back();
      node.key() = tag;
      node.mapped() = value;
      map_.insert(std::move(node));
    }
  }
  // REQUIRES: `it` is an entry of this map.
  void Erase(iterator it) { spare_.push_back(map_.extract(it)); }
  // Whether `tag` had an entry.
  bool Erase(std::uint64_t tag) {
    const iterator it = map_.find(tag);
    if (it == map_.end()) return false;
    Erase(it);
    return true;
  }

  // Entries, spare nodes and the bucket array, approximately.
  std::uint64_t MemoryBytes() const {
    const std::uint64_t node = sizeof(std::pair<const std::uint64_t, V>) + 2 * sizeof(void*);
    return (map_.size() + spare_.size()) * node + map_.bucket_count() * sizeof(void*) +
           spare_.capacity() * sizeof(typename Map::node_type);
  }

 private:
  Map map_;
  std::vector<typename Map::node_type> spare_;
};

}  // namespace devmodel

#endif  // DEVMODEL_TAG_MAP_H_
