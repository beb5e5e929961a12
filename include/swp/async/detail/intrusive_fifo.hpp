#pragma once
// IntrusiveFifo: a FIFO of nodes linked through a member pointer; never allocates.

namespace swp::detail {

/// A singly linked FIFO threading `Node::*Next`. Not thread-safe: callers hold their lock.
template <class Node, Node* Node::*Next>
class IntrusiveFifo {
 public:
  [[nodiscard]] bool empty() const noexcept { return head_ == nullptr; }

  void push(Node& node) noexcept {
    node.*Next = nullptr;
    if (tail_ != nullptr) {
      tail_->*Next = &node;
    } else {
      head_ = &node;
    }
    tail_ = &node;
  }

  /// Puts `node` before the oldest (it is popped next).
  void push_front(Node& node) noexcept {
    node.*Next = head_;
    head_ = &node;
    if (tail_ == nullptr) tail_ = &node;
  }

  /// Moves every node of `other` behind this FIFO's, in order; `other` is left empty.
  void splice_back(IntrusiveFifo& other) noexcept {
    if (other.head_ == nullptr) return;
    (tail_ != nullptr ? tail_->*Next : head_) = other.head_;
    tail_ = other.tail_;
    other.head_ = other.tail_ = nullptr;
  }

  /// The oldest node, unlinked; nullptr when empty.
  Node* pop() noexcept {
    Node* node = head_;
    if (node == nullptr) return nullptr;
    head_ = node->*Next;
    if (head_ == nullptr) tail_ = nullptr;
    return node;
  }

 private:
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
};

}  // namespace swp::detail
