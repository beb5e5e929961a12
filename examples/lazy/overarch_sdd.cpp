// The LazyScheduler RFC's scenario in C++ (docs/lazy.md): an OverArch module with func1 and
// func2, and an SDD module whose forward is an all-to-all — here a stand-in on a host stream
// "comm" that takes device time, as NCCL would on a GPU. The model code calls SDD during the
// forward pass; one hook moves it right before func2's backward, so the all-to-all overlaps
// backward compute instead of delaying the embedding all-to-all func2 waits for.
//
//   overarch_sdd [--steps N]   (N >= 1, 20 by default; a bad flag exits 2, naming it)
//
// Prints the executed order of both schedules and `metric` lines: ms per step without and with
// the reordering, and the gain, measured in this run. Exits 1 if the two schedules compute
// different values (the reordering must not change the program's results).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "swp/device/event.hpp"
#include "swp/device/host_device.hpp"
#include "swp/lazy.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Tensor {
  std::vector<float> v;
  bool operator==(const Tensor&) const = default;
};

// Device time of each operation (the stand-ins' kernels and collectives).
constexpr auto func1_time = 2ms, func2_time = 4ms, func2_bwd_time = 6ms, func1_bwd_time = 4ms;
constexpr auto embedding_a2a_time = 2ms, sdd_a2a_time = 8ms;

// Two in-order queues with real asynchrony: the CPU only enqueues, as it does for a GPU.
struct Streams {
  swp::HostDevice device;
  std::unique_ptr<swp::Stream> compute = device.make_stream("compute");
  std::unique_ptr<swp::Stream> comm = device.make_stream("comm");
  std::unique_ptr<swp::Event> pooled = device.make_event();
  void synchronize() {
    compute->synchronize();
    comm->synchronize();
  }
};

// class SDDModule(nn.Module): forward(x) = dist.all_to_all(x, ...)
struct SDDModule {
  Streams* s;
  Tensor forward(const Tensor& ids) const {
    s->comm->enqueue_work(sdd_a2a_time);
    Tensor out = ids;  // the exchange permutes the ids across ranks: a rotation here
    if (!out.v.empty()) out.v.insert(out.v.begin(), out.v.back()), out.v.pop_back();
    return out;
  }
};

// class OverArch(nn.Module): func1 = relu, func2 = x * x (elementwise), and their backwards.
struct OverArch {
  Streams* s;
  Tensor func1(const Tensor& x) const {
    s->compute->enqueue_work(func1_time);
    Tensor y = x;
    for (float& e : y.v) e = e > 0 ? e : 0;
    return y;
  }
  Tensor func2(const Tensor& x) const {
    // func2 reads pooled embeddings that arrive through their own all-to-all on "comm".
    s->comm->enqueue_work(embedding_a2a_time);
    s->compute->wait(*s->pooled, s->comm->record(*s->pooled));
    s->compute->enqueue_work(func2_time);
    Tensor y = x;
    for (float& e : y.v) e = e * e;
    return y;
  }
  Tensor func2_backward(const Tensor& grad, const Tensor& x) const {
    s->compute->enqueue_work(func2_bwd_time);
    Tensor g = grad;
    for (std::size_t i = 0; i < g.v.size(); ++i) g.v[i] *= 2 * x.v[i];
    return g;
  }
  Tensor func1_backward(const Tensor& grad, const Tensor& x) const {
    s->compute->enqueue_work(func1_bwd_time);
    Tensor g = grad;
    for (std::size_t i = 0; i < g.v.size(); ++i) g.v[i] = x.v[i] > 0 ? g.v[i] : 0;
    return g;
  }
};

struct Result {
  double ms_per_step = 0;
  std::vector<std::string> order;
  Tensor grad, next_ids;
};

Result run(bool reorder, int steps) {
  Streams streams;
  SDDModule sdd_module{&streams};
  OverArch overarch{&streams};
  swp::LazyScheduler sched;

  // register_segment(model.sdd.forward, name="sdd_fwd") and the OverArch methods.
  auto sdd = sched.register_segment("sdd_fwd", &SDDModule::forward, std::as_const(sdd_module));
  auto func1 = sched.register_segment("overarch_func1", &OverArch::func1, std::as_const(overarch));
  auto func2 = sched.register_segment("overarch_func2", &OverArch::func2, std::as_const(overarch));
  auto func1_bwd = sched.register_segment("overarch_func1_bwd", &OverArch::func1_backward,
                                          std::as_const(overarch), {.is_backward = true});
  auto func2_bwd = sched.register_segment("overarch_func2_bwd", &OverArch::func2_backward,
                                          std::as_const(overarch), {.is_backward = true});
  func1.set_backward(func1_bwd);
  func2.set_backward(func2_bwd);
  // Run "sdd_fwd" right before "overarch_func2_bwd": the only difference between the runs.
  if (reorder) sched.register_segment_backward_pre_hook("overarch_func2_bwd", "sdd_fwd");

  Result result;
  const Tensor x{{-1.0F, 0.5F, 2.0F, 3.0F}}, ids{{1, 2, 3, 4}}, ones{{1, 1, 1, 1}};
  Clock::time_point start;
  for (int step = -1; step < steps; ++step) {  // step -1 warms the streams up, untimed
    if (step == 0) start = Clock::now();
    // The model code, unchanged between the runs:
    auto h = func1(x);
    auto next = sdd(ids);  // the next batch's input dist, called during forward
    auto out = func2(h);
    auto grad = sched.backward(ones);
    result.grad = grad.get();
    result.next_ids = next.get();
    sched.flush();
    streams.synchronize();
    if (step == 0) result.order = sched.executed_order();
  }
  result.ms_per_step =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count() / steps;
  return result;
}

void print_order(const char* label, const std::vector<std::string>& order) {
  std::printf("%s", label);
  for (const auto& name : order) std::printf(" %s", name.c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The LazyScheduler RFC's OverArch/SDD scenario (docs/lazy.md): both schedules, "
               "their executed order and ms per step.",
               "overarch_sdd"};
  int steps = 20;
  app.add_option("--steps", steps, "training steps per schedule")
      ->check(examples::integer_in(1, std::numeric_limits<int>::max()));
  if (const auto exit_code = examples::parse(app, argc, argv)) return *exit_code;
  const Result eager = run(false, steps);
  const Result lazy = run(true, steps);
  print_order("order without reordering:", eager.order);
  print_order("order with the pre-hook: ", lazy.order);
  if (!(eager.grad == lazy.grad) || !(eager.next_ids == lazy.next_ids)) {
    std::fprintf(stderr, "error: the reordered program computed different values\n");
    return 1;
  }
  std::printf("metric lazy_example_ms_per_step_in_order %.2f ms\n", eager.ms_per_step);
  std::printf("metric lazy_example_ms_per_step_reordered %.2f ms\n", lazy.ms_per_step);
  std::printf("metric lazy_example_overlap_gain %.2f ratio\n",
              eager.ms_per_step / lazy.ms_per_step);
  return 0;
}
