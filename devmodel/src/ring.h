// FIFO queue on one power-of-two array that doubles when full and never
// shrinks: after warm-up, push and pop allocate nothing (std::deque allocates
// and frees a node every few hundred bytes of traffic). Memory: capacity x
// sizeof(T). Thread-safety: none.
#ifndef DEVMODEL_SRC_RING_H_
#define DEVMODEL_SRC_RING_H_

#include <cstddef>
#include <memory>
#include <utility>

namespace devmodel::internal {

template <typename T>
class Ring {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return mask_ + 1; }

  // REQUIRES: !empty() for front() and pop_front(); i < size() for operator[].
  const T& front() const { return data_[head_]; }
  T& front() { return data_[head_]; }
  const T& operator[](std::size_t i) const { return data_[(head_ + i) & mask_]; }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void push_back(const T& value) {
    if (size_ == capacity()) Grow();
    data_[(head_ + size_) & mask_] = value;
    ++size_;
  }

 private:
  void Grow() {
    const std::size_t capacity = data_ == nullptr ? 8 : 2 * (mask_ + 1);
    std::unique_ptr<T[]> grown(new T[capacity]);
    for (std::size_t i = 0; i < size_; ++i) grown[i] = std::move(data_[(head_ + i) & mask_]);
    data_ = std::move(grown);
    head_ = 0;
    mask_ = capacity - 1;
  }

  std::unique_ptr<T[]> data_;
  std::size_t head_ = 0, size_ = 0;
  std::size_t mask_ = static_cast<std::size_t>(-1);  // capacity 0 until the first push
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_RING_H_
