#include "swp/lazy/detail/lazy_core.hpp"

#include <algorithm>
#include <exception>
#include <functional>
#include <optional>
#include <utility>

#include "swp/lazy/lazy_error.hpp"

namespace swp::detail {

void materialise(LazyCall& call) { call.core->materialise(call); }

namespace {

std::string in_quotes(const std::string& name) { return "'" + name + "'"; }

}  // namespace

LazyCore::LazyCore(LazyOptions options) : options_(std::move(options)) {}

LazyCore::~LazyCore() { abandon(); }

std::uint32_t LazyCore::add_segment(std::string name, SegmentOptions options) {
  if (name.empty()) throw LazyError("register_segment: a segment needs a name");
  if (by_name_.contains(name))
    throw LazyError("register_segment: segment " + in_quotes(name) + " is registered already");
  for (StateId id : options.reads)
    if (id.index >= states_.size())
      throw LazyError("register_segment: " + in_quotes(name) + " reads an unknown state");
  for (StateId id : options.writes)
    if (id.index >= states_.size())
      throw LazyError("register_segment: " + in_quotes(name) + " writes an unknown state");
  const auto index = static_cast<std::uint32_t>(segments_.size());
  by_name_.emplace(name, index);
  segments_.push_back(Segment{.name = std::move(name), .options = std::move(options)});
  called_.push_back(0);
  done_.push_back(0);
  visiting_.push_back(0);
  pending_.emplace_back();
  dirty_ = true;
  // Hazards are checked as soon as the order constraints they depend on are known.
  if (!hooks_.empty()) {
    try {
      prepare(false);
    } catch (...) {
      remove_last_segment();  // a refused registration leaves the scheduler as it was
      throw;
    }
  }
  return index;
}

void LazyCore::remove_last_segment() noexcept {
  by_name_.erase(segments_.back().name);
  segments_.pop_back();
  called_.pop_back();
  done_.pop_back();
  visiting_.pop_back();
  pending_.pop_back();
  dirty_ = true;  // the constraints built with it are rebuilt without it
}

StateId LazyCore::add_state(std::string name, const void* object) {
  if (object == nullptr) throw LazyError("declare_state: state '" + name + "' has no object");
  states_.push_back(std::move(name));
  return StateId{static_cast<std::uint32_t>(states_.size() - 1)};
}

void LazyCore::add_hook(const std::string& target, const std::string& pre, bool backward) {
  const char* where = backward ? "register_segment_backward_pre_hook" : "register_segment_pre_hook";
  const std::uint32_t t = find(target, where);
  (void)find(pre, where);
  if (target == pre)
    throw LazyError(std::string(where) + ": " + in_quotes(target) + " cannot run before itself");
  if (backward && !segments_[t].options.is_backward)
    throw LazyError(std::string(where) + ": " + in_quotes(target) +
                    " is not a backward segment (register it with is_backward = true)");
  hooks_.push_back(Hook{target, pre, backward});
  dirty_ = true;
  try {
    prepare(false);  // schedule names not registered yet are checked later, as documented
  } catch (...) {
    hooks_.pop_back();  // a refused hook leaves the scheduler as it was
    dirty_ = true;
    throw;
  }
}

void LazyCore::validate() {
  dirty_ = true;
  prepare(true);
}

std::uint32_t LazyCore::find(const std::string& name, const char* where) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    std::string known;
    for (const Segment& s : segments_) known += (known.empty() ? "" : ", ") + s.name;
    throw LazyError(std::string(where) + ": unknown segment " + in_quotes(name) +
                    " (registered: " + (known.empty() ? "none" : known) + ")");
  }
  return it->second;
}

void LazyCore::prepare(bool strict) {
  if (!dirty_) return;
  const bool complete = build_constraints(strict);
  check_cycles();
  check_state_hazards();
  dirty_ = !complete;  // names skipped: the next strict prepare checks them
}

bool LazyCore::build_constraints(bool strict) {
  for (Segment& s : segments_) {
    s.before.clear();
    s.hold_targets.clear();
    s.constrained = false;
  }
  auto add_before = [&](std::uint32_t first, std::uint32_t then) {
    auto& b = segments_[then].before;
    if (std::find(b.begin(), b.end(), first) == b.end()) b.push_back(first);
    segments_[first].constrained = segments_[then].constrained = true;
  };
  bool complete = true;
  std::optional<std::uint32_t> previous;  // the last registered name before this one
  for (const std::string& name : options_.schedule) {
    if (!strict && !by_name_.contains(name)) {
      complete = false;  // may be registered later; checked at validate() or the first call
      continue;
    }
    const std::uint32_t s = find(name, "LazyScheduler schedule");
    segments_[s].constrained = true;
    if (previous) add_before(*previous, s);  // what runs between them is implied
    previous = s;
  }
  for (const Hook& h : hooks_) {
    const std::uint32_t t = by_name_.at(h.target), p = by_name_.at(h.pre);
    add_before(p, t);
    segments_[p].hold_targets.push_back(t);
  }
  return complete;
}

void LazyCore::check_cycles() const {
  // Depth-first search over "runs before" edges; a back edge closes a cycle, printed in order.
  enum : char { unseen, open, closed };
  std::vector<char> mark(segments_.size(), unseen);
  std::vector<std::uint32_t> path;
  std::function<void(std::uint32_t)> visit = [&](std::uint32_t s) {
    mark[s] = open;
    path.push_back(s);
    for (std::uint32_t p : segments_[s].before) {
      if (mark[p] == open) {
        std::string cycle;
        const auto from = std::find(path.begin(), path.end(), p);
        for (auto it = path.end(); it != from;) {  // reversed: "runs before" order
          --it;
          cycle += segments_[*it].name + " -> ";
        }
        throw LazyError("hooks and schedule form a cycle: " + cycle + segments_[s].name +
                        " must each run before the next");
      }
      if (mark[p] == unseen) visit(p);
    }
    path.pop_back();
    mark[s] = closed;
  };
  for (std::uint32_t s = 0; s < segments_.size(); ++s)
    if (mark[s] == unseen) visit(s);
}

void LazyCore::check_state_hazards() const {
  // A segment the schedule may hold back (a pre-hook, or one with a predecessor) must not share
  // state with a segment that writes it, nor write state another segment reads (RFC problem 2).
  auto uses = [](const std::vector<StateId>& v, StateId id) {
    return std::any_of(v.begin(), v.end(), [&](StateId x) { return x.index == id.index; });
  };
  for (std::uint32_t d = 0; d < segments_.size(); ++d) {
    const Segment& delayed = segments_[d];
    if (delayed.before.empty() && delayed.hold_targets.empty()) continue;
    for (std::uint32_t o = 0; o < segments_.size(); ++o) {
      if (o == d) continue;
      const Segment& other = segments_[o];
      for (StateId id : delayed.options.reads) {
        if (uses(other.options.writes, id))
          throw HazardError({delayed.name, other.name},
                            "segment " + in_quotes(delayed.name) +
                                " may be delayed but reads state " + in_quotes(states_[id.index]) +
                                ", which segment " + in_quotes(other.name) + " writes");
      }
      for (StateId id : delayed.options.writes) {
        if (uses(other.options.reads, id) || uses(other.options.writes, id))
          throw HazardError({delayed.name, other.name},
                            "segment " + in_quotes(delayed.name) +
                                " may be delayed but writes state " + in_quotes(states_[id.index]) +
                                ", which segment " + in_quotes(other.name) + " also uses");
      }
    }
  }
}

bool LazyCore::enter_call(std::uint32_t segment, const void* const* inputs, std::size_t count) {
  if (dirty_) prepare(true);
  const Segment& s = segments_[segment];
  if (s.options.is_backward && !in_backward_)
    throw LazyError(
        "segment " + in_quotes(s.name) +
        " is a backward segment: it runs from LazyScheduler::backward(), not a direct call");
  if (!pending_writes_.empty()) {
    for (std::size_t k = 0; k < count; ++k) {
      if (inputs[k] == nullptr) continue;
      for (const auto& [address, writer] : pending_writes_) {
        if (address == inputs[k] && writer != segment)
          throw HazardError({s.name, segments_[writer].name},
                            "segment " + in_quotes(s.name) + " reads its input " +
                                std::to_string(k) + ", which delayed segment " +
                                in_quotes(segments_[writer].name) +
                                " writes and has not run yet (materialise it first)");
      }
    }
  }
  return !s.constrained;
}

void LazyCore::begin_run(std::uint32_t segment) {
  if (round_over_) {  // the first run after a flush starts the order of the new round
    executed_.clear();
    round_over_ = false;
  }
  running_.push_back(segment);
  executed_.push_back(segment);
  if (observer_ != nullptr) observer_->segment_started(segments_[segment].name, tag_);
}

void LazyCore::end_run(std::uint32_t segment, bool ok) noexcept {
  running_.pop_back();
  if (observer_ != nullptr) observer_->segment_finished(segments_[segment].name, tag_, ok);
}

bool LazyCore::submit(const std::shared_ptr<LazyCall>& call) {
  const std::uint32_t s = call->segment;
  if (called_[s])
    throw LazyError("segment " + in_quotes(segments_[s].name) +
                    " was called twice in one round (the schedule orders one call of each; "
                    "end the round with finish()/flush() between iterations)");
  called_[s] = 1;
  pending_[s] = call;
  stored_.push_back(call);
  for (const void* w : call->written) pending_writes_.emplace_back(w, s);
  std::uint32_t missing = 0;
  if (runnable(s, missing, true)) run_chain(s);
  drain();
  return call->state == LazyCall::State::done;
}

bool LazyCore::held(std::uint32_t segment) const {
  const auto& targets = segments_[segment].hold_targets;
  if (targets.empty()) return false;
  return std::none_of(targets.begin(), targets.end(),
                      [&](std::uint32_t t) { return called_[t] != 0; });
}

bool LazyCore::runnable(std::uint32_t segment, std::uint32_t& missing, bool honour_holds) {
  if (done_[segment]) return true;
  if (!called_[segment] || (honour_holds && held(segment))) {
    missing = segment;
    return false;
  }
  if (visiting_[segment]) {  // its inputs and the schedule wait for each other: never runnable
    missing = segment;
    return false;
  }
  visiting_[segment] = 1;
  bool ok = std::all_of(segments_[segment].before.begin(), segments_[segment].before.end(),
                        [&](std::uint32_t p) { return runnable(p, missing, honour_holds); });
  // The producers of its pending inputs run first (execute() reads them), so they must be able
  // to: otherwise reading one would throw after other segments ran. Reading a value runs its
  // producer even when held (RFC problem 1), so holds do not count there.
  if (ok && pending_[segment] && pending_[segment]->state == LazyCall::State::stored) {
    struct Context {
      LazyCore* core;
      std::uint32_t* missing;
    } context{this, &missing};
    ok = pending_[segment]->each_pending_input(
        [](void* c, LazyCall& producer) {
          auto& [core, out] = *static_cast<Context*>(c);
          // Another scheduler's call, or one running now (execute() reports that), is not ours
          // to wait for.
          if (producer.core != core || producer.state != LazyCall::State::stored) return true;
          return core->runnable(producer.segment, *out, false);
        },
        &context);
  }
  visiting_[segment] = 0;
  return ok;
}

std::string LazyCore::blocked(std::uint32_t missing) const {
  if (called_[missing])
    return "its inputs and the schedule form a cycle through segment " +
           in_quotes(segments_[missing].name) + " (each waits for the other)";
  return "segment " + in_quotes(segments_[missing].name) +
         ", which must run before it (schedule, hook or input), was never called";
}

bool LazyCore::claim_now(std::uint32_t segment) {
  if (called_[segment])
    throw LazyError("segment " + in_quotes(segments_[segment].name) +
                    " was called twice in one round (the schedule orders one call of each; "
                    "end the round with finish()/flush() between iterations)");
  if (held(segment)) return false;
  for (std::uint32_t p : segments_[segment].before)
    if (!done_[p]) return false;
  called_[segment] = done_[segment] = 1;
  return true;
}

void LazyCore::ran_now() {
  if (!stored_.empty()) drain();
}

bool LazyCore::would_run_now(std::uint32_t segment) {
  if (held(segment)) return false;
  std::uint32_t missing = 0;
  for (std::uint32_t p : segments_[segment].before)
    if (!runnable(p, missing, true)) return false;
  return true;
}

void LazyCore::run_chain(std::uint32_t segment) {
  if (done_[segment]) return;
  for (std::uint32_t p : segments_[segment].before) run_chain(p);
  if (!done_[segment]) execute(*pending_[segment]);
}

void LazyCore::execute(LazyCall& call) {
  const std::uint32_t s = call.segment;
  if (call.state == LazyCall::State::running)
    throw LazyError("segment " + in_quotes(segments_[s].name) + " reads its own result");
  call.ready_inputs();  // producers of its inputs run before it
  if (call.state == LazyCall::State::done) return;
  call.state = LazyCall::State::running;
  std::erase_if(pending_writes_, [&](const auto& w) { return w.second == s; });
  std::erase_if(stored_, [&](const auto& c) { return c.get() == &call; });
  begin_run(s);
  call.run();
  end_run(s, call.error == nullptr);
  call.state = LazyCall::State::done;
  done_[s] = 1;
  ran_.push_back(std::move(pending_[s]));
}

void LazyCore::drain() {
  // Stored calls whose predecessors ran (and whose hook target was called) run now, oldest
  // first; running one may make another runnable, so scan until nothing moves.
  bool moved = true;
  while (moved && !stored_.empty()) {
    moved = false;
    for (const auto& call : stored_) {
      std::uint32_t missing = 0;
      if (!runnable(call->segment, missing, true)) continue;
      run_chain(call->segment);
      moved = true;
      break;  // stored_ changed
    }
  }
}

void LazyCore::materialise(LazyCall& call) {
  if (call.state == LazyCall::State::done) return;
  if (call.state == LazyCall::State::running)
    throw LazyError("segment " + in_quotes(segments_[call.segment].name) + " reads its own result");
  std::uint32_t missing = 0;
  if (!runnable(call.segment, missing, false)) {
    if (called_[missing])
      throw LazyError("segment " + in_quotes(segments_[call.segment].name) +
                      " cannot be materialised: " + blocked(missing));
    throw LazyError("segment " + in_quotes(segments_[call.segment].name) +
                    " was materialised before segment " + in_quotes(segments_[missing].name) +
                    ", which the schedule runs before it, was called");
  }
  run_chain(call.segment);
  drain();
}

void LazyCore::check_state(StateId id, bool write) const {
  if (running_.empty()) return;  // plain program code may touch anything
  const Segment& s = segments_[running_.back()];
  const auto& declared = write ? s.options.writes : s.options.reads;
  const bool ok = std::any_of(declared.begin(), declared.end(),
                              [&](StateId x) { return x.index == id.index; }) ||
                  (!write && std::any_of(s.options.writes.begin(), s.options.writes.end(),
                                         [&](StateId x) { return x.index == id.index; }));
  if (!ok)
    throw HazardError({s.name}, "segment " + in_quotes(s.name) + (write ? " writes" : " reads") +
                                    " state " + in_quotes(states_[id.index]) +
                                    " without declaring it");
}

void LazyCore::add_finding(std::uint32_t segment, std::string output) {
  findings_.push_back(DebugFinding{segments_[segment].name, std::move(output)});
}

void LazyCore::run_backward(std::any& grad) {
  if (in_backward_) throw LazyError("backward: already in a backward pass");
  in_backward_ = true;
  try {
    while (!tape_.empty()) {
      auto entry = std::move(tape_.back());
      tape_.pop_back();
      entry(grad);
    }
  } catch (...) {
    in_backward_ = false;
    tape_.clear();
    throw;
  }
  in_backward_ = false;
}

void LazyCore::flush() {
  // Every stored call that can run does, holds released (a held pre-hook whose target never
  // came runs now), oldest first; only then is the round failed for what is left: a call whose
  // predecessor was never called. Scanning past the front matters: one call that cannot run
  // must not drop the others' runs.
  try {
    while (run_one_stored()) {
    }
  } catch (...) {
    abandon();  // nothing stays pending: what is left gets its LazyError
    throw;
  }
  if (!stored_.empty()) {
    const auto call = stored_.front();
    std::uint32_t missing = 0;
    (void)runnable(call->segment, missing, false);
    const std::string who = segments_[call->segment].name, what = blocked(missing);
    abandon();  // ends the round too
    throw LazyError("round ended with segment " + in_quotes(who) + " stored: " + what);
  }
  // A delayed segment that failed where nobody read its result must not fail silently.
  std::exception_ptr failure;
  for (const auto& call : ran_) {
    if (call->error && !call->error_observed && !failure) {
      call->error_observed = true;
      failure = call->error;
    }
  }
  reset_round();
  round_over_ = true;
  in_round_.store(false, std::memory_order_release);
  if (failure) std::rethrow_exception(failure);
}

bool LazyCore::run_one_stored() {
  for (const auto& call : stored_) {
    std::uint32_t missing = 0;
    if (!runnable(call->segment, missing, false)) continue;
    run_chain(call->segment);  // changes stored_: the caller scans again
    return true;
  }
  return false;
}

void LazyCore::abandon() noexcept {
  // Their Deferreds must not stay pending forever (a co_await would hang): each gets an error.
  for (const auto& call : stored_) {
    call->state = LazyCall::State::done;
    call->error_observed = true;
    try {
      auto error =
          std::make_exception_ptr(LazyError("segment " + in_quotes(segments_[call->segment].name) +
                                            " never ran: its round ended before it could"));
      call->cancel(error);
    } catch (...) {
      // Out of memory making the message: the promise stays pending; nothing else to do.
    }
  }
  reset_round();
  round_over_ = true;
  in_round_.store(false, std::memory_order_release);
}

void LazyCore::reset_round() noexcept {
  std::fill(called_.begin(), called_.end(), 0);
  std::fill(done_.begin(), done_.end(), 0);
  for (auto& p : pending_) p.reset();
  stored_.clear();
  ran_.clear();
  pending_writes_.clear();
  tape_.clear();
}

void LazyCore::begin_round(SegmentTag tag) {
  // A scheduler serves one thread at a time; two task instances sharing one would interleave
  // their rounds. Refuse loudly instead (a lane serializes one task's instances).
  if (in_round_.exchange(true, std::memory_order_acquire))
    throw LazyError(
        "round: this scheduler is in a round already (a scheduler serves one task "
        "instance at a time: use one scheduler per task)");
  // Calls since the last flush() belong to a round nobody ended: refuse, rather than carry
  // their "called" marks (and unread failures) into this one or drop them silently.
  const auto called = std::find(called_.begin(), called_.end(), char{1});
  if (!stored_.empty() || called != called_.end()) {
    in_round_.store(false, std::memory_order_release);
    const std::uint32_t s = called != called_.end()
                                ? static_cast<std::uint32_t>(called - called_.begin())
                                : stored_.front()->segment;
    throw LazyError("round: the previous round was not ended (segment " +
                    in_quotes(segments_[s].name) +
                    " was called since the last flush()): end it with flush() first");
  }
  executed_.clear();
  round_over_ = false;
  tag_ = tag;
}

std::vector<std::string> LazyCore::executed_order() const {
  std::vector<std::string> out;
  out.reserve(executed_.size());
  for (std::uint32_t s : executed_) out.push_back(segments_[s].name);
  return out;
}

}  // namespace swp::detail
