#pragma once
// ItemQueue: the FIFO of a host or sim stream's items (private to src/device).

#include <cassert>
#include <cstddef>
#include <memory>
#include <utility>

#include "stream_item.hpp"

namespace swp::detail {

/// A FIFO of stream items in one ring buffer that doubles when full and never shrinks: once it
/// has held as many items as the stream ever queues at once, push and pop never allocate.
/// Not thread-safe: the stream holds its lock. A push may invalidate references to items, so
/// the streams copy the item they work on.
class ItemQueue {
 public:
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  [[nodiscard]] const StreamItem& front() const noexcept {
    assert(size_ > 0);
    return items_[head_];
  }
  [[nodiscard]] StreamItem& front() noexcept {
    assert(size_ > 0);
    return items_[head_];
  }

  void pop_front() noexcept {
    assert(size_ > 0);
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
  }

  /// Takes back the item pushed last (a push whose follow-up failed).
  void pop_back() noexcept {
    assert(size_ > 0);
    items_[(head_ + size_ - 1) & (capacity_ - 1)] = StreamItem{};
    --size_;
  }

  /// Appends `item`. Throws std::bad_alloc if the ring must grow and cannot; the queue is
  /// unchanged then.
  void push_back(StreamItem item) {
    if (size_ == capacity_) grow();
    items_[(head_ + size_) & (capacity_ - 1)] = std::move(item);
    ++size_;
  }

 private:
  static constexpr std::size_t initial_capacity = 16;  // a power of two, as every capacity

  void grow() {
    const std::size_t capacity = capacity_ == 0 ? initial_capacity : capacity_ * 2;
    auto items = std::make_unique<StreamItem[]>(capacity);
    for (std::size_t i = 0; i < size_; ++i)
      items[i] = std::move(items_[(head_ + i) & (capacity_ - 1)]);
    items_ = std::move(items);
    capacity_ = capacity;
    head_ = 0;
  }

  std::unique_ptr<StreamItem[]> items_;
  std::size_t capacity_ = 0;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace swp::detail
