#pragma once
// An intrusive doubly linked list kept sorted by a key (insert and unlink): the waiter lists of events (by
// generation) and of the sequencer (by turn).

namespace swp::detail {

/// Inserts `node` into the list [head, tail], linked through `prev`/`next` and sorted by
/// `key` ascending, after the nodes with an equal key. Scans from the tail: new waiters
/// usually wait for the newest generation or turn. Never allocates; callers hold the list's
/// lock.
template <class Node, class Key>
void insert_sorted_from_tail(Node*& head, Node*& tail, Node& node, Key Node::*key,
                             Node* Node::*prev, Node* Node::*next) noexcept {
  Node* after = tail;
  while (after != nullptr && after->*key > node.*key) after = after->*prev;
  node.*prev = after;
  node.*next = after != nullptr ? after->*next : head;
  (node.*next != nullptr ? (node.*next)->*prev : tail) = &node;
  (after != nullptr ? after->*next : head) = &node;
}

/// Unlinks `node` from the list [head, tail] it is in and clears its links. Never allocates;
/// callers hold the list's lock.
template <class Node>
void unlink_from(Node*& head, Node*& tail, Node& node, Node* Node::*prev,
                 Node* Node::*next) noexcept {
  (node.*prev != nullptr ? (node.*prev)->*next : head) = node.*next;
  (node.*next != nullptr ? (node.*next)->*prev : tail) = node.*prev;
  node.*prev = nullptr;
  node.*next = nullptr;
}

}  // namespace swp::detail
