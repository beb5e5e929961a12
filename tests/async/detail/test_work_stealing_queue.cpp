#include "swp/async/detail/work_stealing_queue.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace test_work_stealing_queue {  // each test file's names apart (unity builds)

namespace {

using Queue = swp::detail::WorkStealingQueue<int, 8>;

}  // namespace

TEST_CASE("a work-stealing queue hands items out oldest first, to its owner and to thieves") {
  Queue q;
  std::vector<int> items{0, 1, 2, 3, 4};
  CHECK(q.empty());
  CHECK(q.pop() == nullptr);
  for (int& i : items) REQUIRE(q.push(&i));
  CHECK_FALSE(q.empty());
  CHECK(q.pop() == &items[0]);  // the owner
  int* stolen = nullptr;
  std::thread thief([&] { stolen = q.pop(); });
  thief.join();
  CHECK(stolen == &items[1]);
  CHECK(q.pop() == &items[2]);
  CHECK(q.pop() == &items[3]);
  CHECK(q.pop() == &items[4]);
  CHECK(q.pop() == nullptr);
  CHECK(q.empty());
}

TEST_CASE("a full work-stealing queue refuses a push until an item is taken, across wrap-around") {
  Queue q;
  std::vector<int> items(3 * Queue::capacity);
  std::size_t pushed = 0;
  std::size_t popped = 0;
  for (int round = 0; round < 3; ++round) {
    while (q.push(&items[pushed % items.size()])) ++pushed;
    CHECK(pushed - popped == Queue::capacity);  // refused exactly when full
    // Take half, in order, and the ring accepts that many again.
    for (std::size_t k = 0; k < Queue::capacity / 2; ++k)
      REQUIRE(q.pop() == &items[popped++ % items.size()]);
  }
  while (int* item = q.pop()) CHECK(item == &items[popped++ % items.size()]);
  CHECK(popped == pushed);
}

TEST_CASE("with the owner pushing and popping against several thieves, each item is taken once") {
  constexpr int total = 200'000;
  constexpr int thieves = 3;
  swp::detail::WorkStealingQueue<int, 64> q;
  std::vector<int> items(total);
  std::vector<std::atomic<int>> taken(total);
  std::atomic<int> count{0};
  std::atomic<bool> over{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);

  auto take = [&](int* item) {
    taken[static_cast<std::size_t>(item - items.data())].fetch_add(1, std::memory_order_relaxed);
    count.fetch_add(1, std::memory_order_relaxed);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < thieves; ++t) {
    pool.emplace_back([&] {
      while (!over.load(std::memory_order_acquire)) {
        if (int* item = q.pop()) {
          take(item);
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  // The owner pushes everything, popping every third item itself and whenever the ring is full.
  for (int i = 0; i < total && std::chrono::steady_clock::now() < deadline; ++i) {
    while (!q.push(&items[static_cast<std::size_t>(i)])) {
      if (int* item = q.pop()) take(item);
    }
    if (i % 3 == 0) {
      if (int* item = q.pop()) take(item);
    }
  }
  while (count.load() < total && std::chrono::steady_clock::now() < deadline) {
    if (int* item = q.pop()) take(item);
  }
  over.store(true, std::memory_order_release);
  for (auto& t : pool) t.join();

  REQUIRE(count.load() == total);
  int wrong = 0;
  for (auto& t : taken) wrong += t.load() != 1 ? 1 : 0;
  CHECK(wrong == 0);
  CHECK(q.empty());
}

}  // namespace test_work_stealing_queue
