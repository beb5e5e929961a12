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
