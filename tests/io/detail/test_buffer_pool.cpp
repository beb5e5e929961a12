// BufferPool: buffers handed out again once given back, and one given back where the pool
// cannot grow to keep it freed instead of ending the process.

#include <doctest/doctest.h>

#include <memory>

#include "support/alloc_counter.hpp"
#include "swp/io/detail/buffer_pool.hpp"

namespace test_buffer_pool {  // each test file's names apart (unity builds)

TEST_CASE("buffers come back to the pool and are handed out again") {
  auto pool = std::make_shared<swp::io::detail::BufferPool>(false);
  auto a = pool->acquire(100);
  REQUIRE(a != nullptr);
  CHECK(a->capacity >= 100);
  std::byte* const data = a->data;
  a.reset();
  CHECK(pool->counts().free == 1);
  auto b = pool->acquire(100);
  CHECK(b->data == data);
  CHECK(pool->counts().allocated == 1);
}

TEST_CASE("a buffer the pool cannot grow to keep is freed, not the process ended") {
  if (!swp::test::allocation_failures_injectable()) {
    MESSAGE("skipped: allocation failures are injected only where operator new is replaced");
    return;
  }
  auto pool = std::make_shared<swp::io::detail::BufferPool>(false);
  auto a = pool->acquire(100);
  auto b = pool->acquire(100);
  const std::size_t capacity = b->capacity;
  a.reset();  // kept: the free list holds one
  const auto before = pool->counts();
  bool fired = false;
  {
    // Keeping the second grows the free list: that allocation fails, in the batch's deleter.
    const swp::test::FailNthAllocation fail(1);
    b.reset();
    fired = fail.fired();
  }
  CHECK(fired);
  const auto after = pool->counts();
  CHECK(after.free == before.free);
  CHECK(after.allocated_bytes == before.allocated_bytes - capacity);
  auto c = pool->acquire(100);  // the one kept
  CHECK(c != nullptr);
  CHECK(pool->counts().free == 0);
}

}  // namespace test_buffer_pool
