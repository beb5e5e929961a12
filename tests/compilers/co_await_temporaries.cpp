// The push form's temporary submits, compiled by each compiler the docs name (tools/
// compiler-check.sh: g++ and clang++, under AddressSanitizer): `co_await pipe.submit(R{...})`
// and `co_await swp::async_submit(pipe, R{...}, asio::use_awaitable)` must lose and double-free
// nothing. First it checks the compiler itself for the g++ 12 defect (a braced aggregate
// temporary inside co_await destroyed twice, docs/building.md "Compiler defects"): where it is
// present, the aggregate forms are the compiler's to get wrong and are skipped, saying so; the
// forms the docs give instead (a named batch, a batch with a constructor) are checked on every
// compiler. Exit 1 on any failure; ends with "N passed, M failed".

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <coroutine>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "eager.hpp"
#include "swp/async/sync_wait.hpp"
#include "swp/engine/asio.hpp"
#include "swp/engine/data_flow_pipeline.hpp"

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  (ok ? passed : failed) += 1;
}

// The compiler alone: an aggregate temporary with a member that counts its destructions,
// inside a co_await of an awaitable that is ready at once. Exactly one destruction is right.
namespace probe {
int destroyed = 0;
struct Member {
  Member() = default;
  Member(const Member&) = default;
  ~Member() { ++destroyed; }
};
struct Aggregate {
  Member m;
};
struct Ready {
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  void await_resume() const noexcept {}
};
Ready take(const Aggregate&) { return {}; }
using compiler_probe::Eager;
// The member copied from an lvalue, as in `Batch{token}`: one copy, destroyed once.
Eager run(const Member& m, int& after) {
  co_await take(Aggregate{m});
  after = destroyed;
}
bool compiler_destroys_aggregate_temporaries_twice() {
  const Member m;
  destroyed = 0;
  int after = 0;
  run(m, after);
  return after > 1;
}
}  // namespace probe

struct Aggregate {  // what a user writes first
  std::shared_ptr<int> token;
};
struct Constructed {  // the documented workaround on an affected g++
  Constructed() = default;
  explicit Constructed(std::shared_ptr<int> t) : token(std::move(t)) {}
  std::shared_ptr<int> token;
};

template <class Batch>
using Ctx = swp::IterContext<Batch>;

template <class Batch>
swp::Plan<Ctx<Batch>> plan() {
  swp::Plan<Ctx<Batch>> p;
  p.add("Use", [](Ctx<Batch>& ctx) { return *ctx.batch.token; }, {.stage = 0});
  return p;
}

template <class Batch>
using Pipe = swp::DataFlowPipeline<Ctx<Batch>>;

// `produce(pipe, token)` (a swp::Co<void>) submits 50 batches holding `token` from a thread of
// its own, capacity 1 (so most submits suspend), while this thread drives the pipeline.
template <class Batch, class Produce>
void check_submit(const std::string& what, Produce produce) {
  auto token = std::make_shared<int>(7);
  int retired = 0;
  {
    swp::Runtime rt({.backend = swp::Backend::host, .workers = 1});
    Pipe<Batch> pipe(rt, plan<Batch>(), 2);
    pipe.on_retire([&](const Ctx<Batch>& c) { retired += *c.batch.token == 7 ? 1 : 0; });
    pipe.fill_submissions(1);
    std::thread producer([&] {
      swp::sync_wait(produce(pipe, token));
      pipe.close_submissions();
    });
    while (pipe.progress()) {
    }
    producer.join();
  }
  check(retired == 50 && token.use_count() == 1,
        what + " (" + std::to_string(retired) + " of 50 retired, use_count " +
            std::to_string(token.use_count()) + ")");
}

// The same through Asio: `produce(pipe, token)` (an asio::awaitable<void>) and the driver
// (async_progress) as two coroutines on one io_context.
template <class Batch, class Produce>
void check_async_submit(const std::string& what, Produce produce) {
  auto token = std::make_shared<int>(7);
  int retired = 0;
  {
    boost::asio::io_context io;
    swp::Runtime rt(std::make_unique<swp::AsioScheduler>(io.get_executor()));
    Pipe<Batch> pipe(rt, plan<Batch>(), 2);
    pipe.on_retire([&](const Ctx<Batch>& c) { retired += *c.batch.token == 7 ? 1 : 0; });
    pipe.fill_submissions(1);
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          co_await produce(pipe, token);
          pipe.close_submissions();
        },
        boost::asio::detached);
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          while (co_await swp::async_progress(pipe, boost::asio::use_awaitable)) {
          }
        },
        boost::asio::detached);
    io.run();
  }
  check(retired == 50 && token.use_count() == 1,
        what + " (" + std::to_string(retired) + " of 50 retired, use_count " +
            std::to_string(token.use_count()) + ")");
}

// Each producer writes its batch inside the co_await expression, as users do.
swp::Co<void> submit_constructed(Pipe<Constructed>& pipe, std::shared_ptr<int>& token) {
  for (int i = 0; i < 50; ++i) co_await pipe.submit(Constructed(token));
}
swp::Co<void> submit_named(Pipe<Aggregate>& pipe, std::shared_ptr<int>& token) {
  for (int i = 0; i < 50; ++i) {
    Aggregate named{token};
    co_await pipe.submit(std::move(named));
  }
}
swp::Co<void> submit_aggregate(Pipe<Aggregate>& pipe, std::shared_ptr<int>& token) {
  for (int i = 0; i < 50; ++i) co_await pipe.submit(Aggregate{token});
}
boost::asio::awaitable<void> async_submit_constructed(Pipe<Constructed>& pipe,
                                                      std::shared_ptr<int>& token) {
  for (int i = 0; i < 50; ++i)
    co_await swp::async_submit(pipe, Constructed(token), boost::asio::use_awaitable);
}
boost::asio::awaitable<void> async_submit_aggregate(Pipe<Aggregate>& pipe,
                                                    std::shared_ptr<int>& token) {
  for (int i = 0; i < 50; ++i)
    co_await swp::async_submit(pipe, Aggregate{token}, boost::asio::use_awaitable);
}

}  // namespace

int main() {
  const bool defect = probe::compiler_destroys_aggregate_temporaries_twice();
  std::printf("this compiler %s braced aggregate temporaries inside co_await twice\n",
              defect ? "DESTROYS" : "does not destroy");
  check_submit<Constructed>("co_await pipe.submit(Constructed(token))", submit_constructed);
  check_submit<Aggregate>("co_await pipe.submit(std::move(named))", submit_named);
  check_async_submit<Constructed>("co_await async_submit(pipe, Constructed(token), use_awaitable)",
                                  async_submit_constructed);
  if (defect) {
    std::printf("skipped: the aggregate temporaries (this compiler's defect, docs/building.md)\n");
  } else {
    check_submit<Aggregate>("co_await pipe.submit(Aggregate{token})", submit_aggregate);
    check_async_submit<Aggregate>("co_await async_submit(pipe, Aggregate{token}, use_awaitable)",
                                  async_submit_aggregate);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
