#pragma once
// A task instance and the state around it (not for direct use): what the engine core's hot
// path reads and writes per (task, iteration) — the instance with its join counter, its
// iteration's IterationSync (its task's TaskInfo: task_table.hpp) — apart from the core that
// drives them (engine_core.hpp).

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "swp/async/co.hpp"
#include "swp/async/lane.hpp"
#include "swp/async/scheduler.hpp"
#include "swp/core/plan_graph.hpp"
#include "swp/device/event.hpp"
#include "swp/device/stream.hpp"
#include "swp/engine/detail/task_table.hpp"

namespace swp {

class TaskScope;

namespace detail {

class EngineCore;
struct ContextSlot;
struct Instance;
struct InstanceCold;

/// What a task instance is doing, for the hang diagnosis.
enum class InstanceState : std::uint8_t {
  idle,        ///< not released in this slot's current iteration
  queued,      ///< released, waiting for its lane
  dependency,  ///< holds its lane, waits for a dependency (see Instance::waits_for)
  turn,        ///< waiting for its submission turn
  running,     ///< running its body
  finished,
  coroutine,   ///< its body is a coroutine that started: it runs or waits in an await
};

/// The instances of one IterationSync entry, one per task, in one line-aligned allocation.
/// Each is made in place when the core fills it in (`emplace`, in task order), so building a
/// pipeline goes through the instances' memory once: a plan of 100,000 tasks has tens of
/// megabytes of them, and default-constructing them all first was a second pass.
class InstanceArray {
 public:
  InstanceArray() = default;
  explicit InstanceArray(std::size_t capacity);
  InstanceArray(InstanceArray&& other) noexcept
      : storage_(std::exchange(other.storage_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  InstanceArray& operator=(InstanceArray&& other) noexcept {
    InstanceArray gone(std::move(*this));
    storage_ = std::exchange(other.storage_, nullptr);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  ~InstanceArray();

  /// Makes the instance of the next task (the size-th) in place.
  Instance& emplace();
  /// Where the instance of task `t` is or will be (before it is made: an address to keep).
  [[nodiscard]] Instance* at(std::size_t t) const noexcept;

  [[nodiscard]] Instance& operator[](std::size_t t) const noexcept { return *at(t); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] Instance* begin() const noexcept { return at(0); }
  [[nodiscard]] Instance* end() const noexcept { return at(size_); }

 private:
  Instance* storage_ = nullptr;
  std::size_t size_ = 0;
};

/// What an instance records its device work with: its event, made by the runtime's device
/// (with its native handle where the backend has one), and its registration with that event
/// while the caller waits for the iteration's device work (slot reuse, next()): one node per
/// instance, so watching never allocates. Made at the instance's first record and kept: most
/// instances of most plans never record, and held in every instance these were a quarter of
/// its bytes.
struct InstanceEvent {
  InstanceEvent(std::unique_ptr<Event> made, EventWaiter& waiter) noexcept
      : event(std::move(made)), watch(waiter) {}
  std::unique_ptr<Event> event;
  EventWait watch;
};

/// What an instance keeps outside its cache line: what only device work, errors, submission
/// turns and NVTX touch. One per instance, in an array per sync entry (IterationSync::cold):
/// the instance itself is one cache line, and a plan's instances are most of a pipeline's
/// memory (a 100,000-task clock pipeline has five entries of them).
struct InstanceCold {
  // Its event and the registration with it, made at its first record (finish_guarded); null
  // until then. Read only for a recorded generation, which its record published.
  std::unique_ptr<InstanceEvent> device;
  std::exception_ptr error;      // why it failed (its own error or a dependency's)
  std::uint64_t turn = 0;        // sequencer turn of a globally ordered instance
  std::uint64_t nvtx_range = 0;  // its NVTX range while it runs (0: none)
};

/// Synchronization state of one iteration: instances, events. The core has one more of these
/// than context slots, so that the state of iteration i - 1 stays intact until iteration i
/// retired: inter-iteration dependencies read it without racing slot reuse.
/// Each entry has cache lines of its own (the entries sit side by side in a vector), and its
/// `remaining`, which every finishing instance decrements and the waiting caller polls, one
/// apart from what the instances read on every step.
struct alignas(64) IterationSync {
  // The iteration the entry holds and its context slot (a pointer: the clock's periods reach
  // it once per task, without the core's vector): written when it is admitted, before
  // anything of it is released (so its instances read them without synchronizing), and kept
  // here rather than in every instance, so an admission writes one cache line, not one per
  // task (with several threads, lines the lanes own).
  std::int64_t iter = -1;
  ContextSlot* slot = nullptr;
  // Fixed at construction: what every instance of the entry would otherwise carry (an
  // instance is one cache line; see Instance).
  EngineCore* core = nullptr;
  IterationSync* previous = nullptr;  // the entry of the iteration before (inter dependencies)
  IterationSync* next = nullptr;      // the entry of the iteration after (its successors there)
  // Its instances, one per task (by task index), and what they keep apart from their own
  // cache line: their scopes (the core's, EngineCore::scopes_) and their cold state.
  InstanceArray instances;
  TaskScope* scopes = nullptr;
  std::unique_ptr<InstanceCold[]> cold;
  // The stream every instance of the entry queues device work on instead of its task's, or
  // null: run_serial's "default" stream (entry 0 only, until the next run).
  Stream* serial_stream = nullptr;
  // Event generation each task recorded in the entry's iteration (0: none). Nonzero only for
  // the tasks `recorded` lists: the admission of the entry's next iteration clears those
  // (forget_recorded), so a finish that records nothing writes nothing here.
  std::vector<std::uint64_t> generation;
  // Instances whose finish counts towards the iteration's completion and that have not
  // finished yet. Under a policy that releases every instance (both engines') only the sinks
  // count (instances with no intra-iteration dependent): every other instance's last touch of
  // the core is its count-down of its last dependent, which some sink's finish follows.
  // Otherwise every instance would count.
  alignas(64) std::atomic<int> remaining{0};
  // Another thread than the one waiting in progress() finished one of its instances that
  // count towards `remaining` (the sinks, which end what the thread carried: a chain's last
  // task, a join), before its decrement, so the caller sees it once the iteration completed:
  // whether workers take a share of the pipeline's work (AloneWindow).
  // Written only when false.
  std::atomic<bool> helped{false};
  // The iteration whose instances all finished, stored by its last finisher after its
  // decrement (its last touch of the core). Apart from `remaining`: the caller polls this
  // line, which is written once per iteration, while the finishing threads decrement
  // `remaining` once per task without the polling caller taking their line away each time.
  alignas(64) std::atomic<std::int64_t> completed{-1};
  // The tasks whose instances recorded an event in this iteration, the first `recorded_count`
  // of them (in the order they finished; sized for every task). Whoever waits for the
  // iteration's device work looks at these, not at every task: a plan of 70,000 tasks with two
  // on streams checks two events per look, however often the wait looks. Appended by the
  // recording instance before it counts down its consumers and its `remaining`; the list is
  // read once the iteration completed, the count also before (device()). Not initialized:
  // nothing past the count is read, and most plans' entries never record (untouched pages).
  std::unique_ptr<TaskIndex[]> recorded;
  std::atomic<std::uint32_t> recorded_count{0};
  // The admission of the entry's next iteration (EngineCore::prepare): what the last one
  // recorded is forgotten, its generations cleared. Its readers are done by then: its device
  // work was awaited before its slot took another iteration (await_slot), and the iteration
  // after it, whose inter dependencies read it, retired.
  void forget_recorded() noexcept {
    const std::uint32_t count = recorded_count.load(std::memory_order_relaxed);
    for (std::uint32_t k = 0; k < count; ++k) generation[recorded[k]] = 0;
    recorded_count.store(0, std::memory_order_relaxed);
  }
  // Some instance recorded an event (device_done has something to look at; consumers look
  // at generations).
  [[nodiscard]] bool device() const noexcept {
    return recorded_count.load(std::memory_order_relaxed) != 0;
  }
  // FailurePolicy::skip: the task whose own error failed this iteration (the first one), or
  // no_failure. Set before the failing instance counts down its consumers.
  static constexpr TaskIndex no_failure = static_cast<TaskIndex>(-1);
  std::atomic<TaskIndex> failed_task{no_failure};
  // Every instance counts towards `remaining` in this iteration, not only the sinks (an
  // observer was attached when it was admitted; see EngineCore::completion_count_).
  // Written at admission, before anything of it is released.
  bool counts_all = false;
};

/// Wakes the thread waiting in a scheduler's drive_until when an event it needs completes.
class SchedulerWaker final : public EventWaiter {
 public:
  explicit SchedulerWaker(Scheduler& scheduler) : scheduler_(scheduler) {}
  void event_completed() noexcept override { scheduler_.notify(); }

 private:
  Scheduler& scheduler_;
};

/// One (task, sync entry): a static join counter, the lane job, the event, the outcome.
/// Nothing here is allocated per iteration: an entry serves iteration e, e + E, e + 2E, ...
/// (E = slots + 1), and its counter is re-armed to the task's in-degree when it is consumed.
///
/// The join counter `pending` counts what the instance still waits for. Data-flow: its intra
/// dependencies, its inter dependencies (of iteration i - 1, none for i = 0), the admission of
/// its iteration where something could count the counter down before it (inter dependencies,
/// the ordered chain; an instance with no dependencies is released by the admission itself),
/// and for a globally ordered task the ordered task before it (one chain over
/// (iteration, rank) finishing one after the other, so turns go out in the same order on
/// every rank and an ordered instance never holds a lane waiting for its turn).
/// Whoever takes it to zero releases the instance to its lane. Clock: its dependencies plus
/// a start token the instance itself gives when its lane starts it (periods release it, lanes
/// keep their order); whoever takes it to zero runs it, on its lane. A task with a lane edge
/// (see LaneClaim) counts the edge too, and an instance released under its lane's claim gets
/// its start token from its period: whoever takes it to zero then posts it, as data-flow does.
///
/// Why re-arming at consumption is safe: a decrement for iteration i + E comes from an
/// instance of iteration i + E or i + E - 1 = i + slots, which runs only after iteration
/// i + slots was admitted, so after iteration i retired and this instance finished.
///
/// Layout: one cache line (the object is line-aligned): its bases' links, what every step
/// reads or writes, and its state. What follows from these is not stored again: its task is
/// its TaskInfo's, its lane-edge successor, scope and stream follow from its entry. What only
/// device work, errors, turns and NVTX touch is in its entry's cold array (InstanceCold). A
/// period touches one line per instance, and an instance with its cold state is 96 bytes, not
/// 128 (instances are most of a large pipeline's memory).
struct alignas(64) Instance final : Lane::Job, Runnable, CoEnvironment {
  const TaskInfo* info = nullptr;  // its task's (one load on the hot path, not an index)
  IterationSync* sync = nullptr;   // its entry's state
  std::atomic<int> pending{0};
  // Released under its task's lane claim (see LaneClaim): it runs as a runnable of
  // its lane's scheduler, not as a job of the lane. Set by its release (before its state),
  // read by its finish, by a revoking submitter and by the hang report.
  std::atomic<bool> bypassed{false};
  bool stream_used = false;          // the body used its stream
  bool carries_device_work = false;  // a dependency handed it device work
  bool failed = false;

 private:
  // stamp(iteration) << 3 | InstanceState; in state `dependency`, what it waits for instead
  // of the stamp (see wait_for_dependency).
  std::atomic<std::uint64_t> state_word{0};

 public:
  /// Its task (its position in its entry's instances).
  [[nodiscard]] std::uint32_t task() const noexcept { return info->task; }
  /// Its task's instance in the entry after its own (the lane edge's successor).
  [[nodiscard]] Instance& after() const noexcept { return sync->next->instances[task()]; }
  /// Handed to the body (the core's, EngineCore::scopes_; defined in task_scope.hpp).
  [[nodiscard]] TaskScope& scope() const noexcept;
  /// Where this execution queues device work: its task's stream, or run_serial's.
  [[nodiscard]] Stream& stream() const noexcept {
    return sync->serial_stream != nullptr ? *sync->serial_stream : *info->stream;
  }
  /// Its cold state (see InstanceCold).
  [[nodiscard]] InstanceCold& cold() const noexcept { return sync->cold[task()]; }
  [[nodiscard]] std::exception_ptr& error() const noexcept { return cold().error; }
  [[nodiscard]] std::unique_ptr<InstanceEvent>& device() const noexcept { return cold().device; }
  [[nodiscard]] std::uint64_t& turn() const noexcept { return cold().turn; }

  /// The iteration it runs in, and that iteration's context slot.
  [[nodiscard]] std::int64_t iter() const noexcept { return sync->iter; }
  [[nodiscard]] ContextSlot& slot() const noexcept { return *sync->slot; }
  [[nodiscard]] EngineCore& core() const noexcept { return *sync->core; }
  /// The entries of the iterations before and after its own.
  [[nodiscard]] IterationSync& previous() const noexcept { return *sync->previous; }
  [[nodiscard]] IterationSync& next() const noexcept { return *sync->next; }

  /// Enters state `dependency`, waiting for task `dep` of iteration `of` (its own or the one
  /// before): one store, which the hang report decodes (waits_for).
  void wait_for_dependency(TaskIndex dep, std::int64_t of) noexcept {
    const std::uint64_t before = of < iter() ? previous_bit : 0;
    const std::uint64_t waits = static_cast<std::uint64_t>(dep) | before;
    state_word.store(waits << 3 | static_cast<std::uint64_t>(InstanceState::dependency),
                     std::memory_order_release);
  }
  /// What it waits for while in state `dependency`: the task and its iteration; nothing once
  /// it left that state.
  [[nodiscard]] std::optional<std::pair<TaskIndex, std::int64_t>> waits_for() const noexcept {
    const std::uint64_t word = state_word.load(std::memory_order_acquire);
    if (static_cast<InstanceState>(word & 7) != InstanceState::dependency) return std::nullopt;
    const std::uint64_t waits = word >> 3;
    return std::pair{static_cast<TaskIndex>(waits & ~previous_bit),
                     iter() - ((waits & previous_bit) != 0 ? 1 : 0)};
  }

  /// Its state in iteration `of`, the iteration its entry holds (in flight, or retired and not
  /// reused yet). `finished` is stamped with the iteration it was set in, so an instance is idle
  /// in a new iteration without a reset at admission: until its release it still reads
  /// `finished` from the iteration before, of another stamp. The states between its release
  /// and its finish carry no stamp: an instance in one of them is in its entry's current
  /// iteration (the one before finished before that iteration was admitted).
  [[nodiscard]] InstanceState state_in(std::int64_t of) const noexcept {
    const std::uint64_t word = state_word.load(std::memory_order_acquire);
    const auto state = static_cast<InstanceState>(word & 7);
    if (state == InstanceState::dependency) return state;  // unstamped: holds waits_for
    const std::uint64_t stamped = word >> 3;
    return stamped == unstamped || stamped == stamp(of) ? state : InstanceState::idle;
  }
  /// Sets its state in its current iteration (release: the hang report reads it elsewhere).
  /// Only `finished` reads the iteration for its stamp: the release, the start and the waits
  /// store a constant (three loads and a computation less per instance on the hot path).
  void set_state(InstanceState s) noexcept {
    const std::uint64_t bits = static_cast<std::uint64_t>(s);
    if (s == InstanceState::finished) {
      state_word.store(stamp(iter()) << 3 | bits, std::memory_order_release);
    } else {
      state_word.store(unstamped << 3 | bits, std::memory_order_release);
    }
  }
  /// set_state(finished), where the caller has its iteration at hand (`sync->iter`).
  void set_finished(std::int64_t iter) noexcept {
    state_word.store(stamp(iter) << 3 | static_cast<std::uint64_t>(InstanceState::finished),
                     std::memory_order_release);
  }
  /// Forgets every state (a new run's hang report shows nothing of the last).
  void clear_state() noexcept { state_word.store(0, std::memory_order_relaxed); }
  /// Released under its lane's claim and not finished, in whichever iteration (acquire: its
  /// release stores `bypassed`, then its state; see LaneClaim).
  [[nodiscard]] bool holds_claimed_lane() const noexcept {
    const auto state = static_cast<InstanceState>(state_word.load(std::memory_order_acquire) & 7);
    return state != InstanceState::idle && state != InstanceState::finished &&
           bypassed.load(std::memory_order_relaxed);
  }

  Instance();
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  void start(Lane& lane) noexcept override;
  void resume(Lane& lane) noexcept override;
  /// Starts it as a runnable, released under its lane's claim (its lane would start it now).
  void run() noexcept override;

 private:
  static constexpr std::uint64_t previous_bit = std::uint64_t{1} << 31;
  // A state without an iteration (see state_in); a cleared word (0) is idle without one.
  static constexpr std::uint64_t unstamped = 0;
  static std::uint64_t stamp(std::int64_t iter) noexcept {
    return static_cast<std::uint64_t>(iter) + 1;  // never `unstamped`
  }
};

static_assert(sizeof(Instance) == 64, "an instance is one cache line");

inline Instance* InstanceArray::at(std::size_t t) const noexcept { return storage_ + t; }

}  // namespace detail
}  // namespace swp
