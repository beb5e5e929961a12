#include "swp/async/detail/sorted_list.hpp"

#include <doctest/doctest.h>

#include <vector>

namespace test_sorted_list {  // each test file's names apart (unity builds)

namespace {

struct Node {
  int key = 0;
  int id = 0;
  Node* prev = nullptr;
  Node* next = nullptr;
};

std::vector<int> ids_forward(Node* head) {
  std::vector<int> out;
  for (Node* n = head; n != nullptr; n = n->next) out.push_back(n->id);
  return out;
}

std::vector<int> ids_backward(Node* tail) {
  std::vector<int> out;
  for (Node* n = tail; n != nullptr; n = n->prev) out.push_back(n->id);
  return out;
}

}  // namespace

TEST_CASE("insert_sorted_from_tail keeps keys ascending, equal keys in insertion order") {
  std::vector<Node> nodes{{5, 0}, {1, 1}, {5, 2}, {9, 3}, {0, 4}, {5, 5}};
  Node* head = nullptr;
  Node* tail = nullptr;
  for (Node& n : nodes)
    swp::detail::insert_sorted_from_tail(head, tail, n, &Node::key, &Node::prev, &Node::next);
  CHECK(ids_forward(head) == std::vector<int>{4, 1, 0, 2, 5, 3});
  CHECK(ids_backward(tail) == std::vector<int>{3, 5, 2, 0, 1, 4});
  CHECK(head->prev == nullptr);
  CHECK(tail->next == nullptr);
}

TEST_CASE("unlink_from removes a node from the head, the middle and the tail") {
  std::vector<Node> nodes{{1, 0}, {2, 1}, {3, 2}, {4, 3}};
  Node* head = nullptr;
  Node* tail = nullptr;
  for (Node& n : nodes)
    swp::detail::insert_sorted_from_tail(head, tail, n, &Node::key, &Node::prev, &Node::next);
  swp::detail::unlink_from(head, tail, nodes[1], &Node::prev, &Node::next);
  CHECK(ids_forward(head) == std::vector<int>{0, 2, 3});
  swp::detail::unlink_from(head, tail, nodes[0], &Node::prev, &Node::next);
  swp::detail::unlink_from(head, tail, nodes[3], &Node::prev, &Node::next);
  CHECK(ids_forward(head) == std::vector<int>{2});
  CHECK(ids_backward(tail) == std::vector<int>{2});
  CHECK(nodes[1].prev == nullptr);
  CHECK(nodes[1].next == nullptr);
  swp::detail::unlink_from(head, tail, nodes[2], &Node::prev, &Node::next);
  CHECK(head == nullptr);
  CHECK(tail == nullptr);
}

}  // namespace test_sorted_list
