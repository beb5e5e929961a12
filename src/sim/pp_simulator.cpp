#include "swp/sim/pp_simulator.hpp"

#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

#include "number_text.hpp"
#include "queue_window.hpp"
#include "swp/device/event.hpp"
#include "swp/device/sim_device.hpp"

namespace swp {

namespace {

using Kind = PpAction::Kind;

std::string rank_action(int rank, std::size_t pc, const std::string& at) {
  return "rank " + std::to_string(rank) + " at action " + std::to_string(pc) + " (" + at + ")";
}

Clock::duration to_duration(double us) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(us));
}

// One value per rank from a PpCosts vector (one value: every rank).
std::vector<Clock::duration> per_rank(const std::vector<double>& us, int ranks, int chunks,
                                      const char* what) {
  if (us.size() != 1 && us.size() != static_cast<std::size_t>(ranks))
    throw std::invalid_argument(std::string(what) + " has " + std::to_string(us.size()) +
                                " values; give one, or one per stage (" + std::to_string(ranks) +
                                ")");
  std::vector<Clock::duration> out;
  for (int r = 0; r < ranks; ++r) {
    const double v = us.size() == 1 ? us[0] : us[static_cast<std::size_t>(r)];
    if (!std::isfinite(v) || v < 0 || v > 1e12)
      throw std::invalid_argument(std::string(what) + " of stage " + std::to_string(r) + " (" +
                                  detail::number_text(v) + " us) must be finite and in 0..1e12");
    out.push_back(to_duration(v / chunks));
  }
  return out;
}

Clock::duration comm_duration(double us) {
  if (!std::isfinite(us) || us < 0 || us > 1e12)
    throw std::invalid_argument("the comm time (" + detail::number_text(us) +
                                " us) must be finite and in 0..1e12");
  return to_duration(us);
}

// Records what the streams ran: one observer per track, so a slice knows its row.
struct Recorder {
  PpSimResult& result;
  bool keep;
  int chunks;
  detail::QueueWindow& window;
};

class TrackObserver final : public DeviceObserver {
 public:
  // `queue`: the track's id in the QueueWindow.
  TrackObserver(Recorder& rec, std::size_t track, int rank, std::size_t queue)
      : rec_(rec), track_(track), rank_(rank), queue_(queue) {}
  void device_work(const Stream&, const DeviceWork& w) noexcept override {
    const auto start = w.start - Clock::time_point{};
    const auto end = w.end - Clock::time_point{};
    rec_.result.latency = std::max(rec_.result.latency, end);
    ++rec_.result.work_items;
    if (rank_ >= 0) rec_.result.busy[static_cast<std::size_t>(rank_)] += end - start;
    rec_.window.completed(queue_);
    if (!rec_.keep) return;
    // Tags: task = 2 · chunk + pass for computes, offset by 2 · chunks for transfers.
    const auto code = static_cast<int>(w.tag.task);
    const bool transfer = code >= 2 * rec_.chunks;
    const int c = transfer ? code - 2 * rec_.chunks : code;
    // Reserved for every work item of the schedule (Simulation's constructor): no allocation.
    rec_.result.slices.push_back(PpSlice{track_, transfer, static_cast<PpPass>(c % 2),
                                         static_cast<int>(w.tag.iter), c / 2, start, end});
  }

 private:
  Recorder& rec_;
  std::size_t track_;
  int rank_;
  std::size_t queue_;
};

// A message identity: what a send says it carries and a recv says it expects.
struct Message {
  PpPass pass;
  int microbatch;
  int chunk;
  bool operator==(const Message&) const = default;
};

// A transfer sent and not yet queued on its link's stream (the link's window is full).
struct Transfer {
  std::uint64_t ready;  // the generation of the sender's `ready` event it waits for
  std::uint32_t code;   // its WorkTag's task
  std::int32_t microbatch;
};

struct Link {
  int from, to;
  std::size_t queue;  // its id in the QueueWindow
  std::unique_ptr<Stream> stream;
  std::unique_ptr<TrackObserver> observer;
  std::unique_ptr<Event> delivered;  // generation k: the k-th message arrived
  std::unique_ptr<Event> posted;     // generation k: the receiver reached its k-th recv
  std::deque<Message> unreceived;    // sent and not yet received, in send order
  std::deque<Transfer> unqueued;     // sent and not yet on the stream, in send order
  std::size_t sent = 0;
  std::size_t queued = 0;  // transfers queued on the stream (the k-th records delivered k)
  std::size_t received = 0;
  std::size_t posted_count = 0;
  std::vector<int> waiting;  // ranks blocked on this link
};

// The work items `s` runs: its computes and its sends (one transfer each).
std::size_t work_items_of(const PpSchedule& s) {
  std::size_t n = 0;
  for (const auto& program : s.programs)
    for (const PpAction& a : program) n += a.kind == PpAction::Kind::recv ? 0 : 1;
  return n;
}

class Simulation {
 public:
  Simulation(const PpSchedule& s, const PpCosts& costs, const PpSimOptions& options,
             PpSimResult& result)
      : s_(s),
        fwd_(per_rank(costs.fwd_us, s.ranks, s.chunks, "the forward time")),
        bwd_(per_rank(costs.bwd_us, s.ranks, s.chunks, "the backward time")),
        comm_(comm_duration(costs.comm_us)),
        rendezvous_(options.send_mode == PpSendMode::rendezvous),
        rec_{result, options.keep_timeline, s.chunks, window_} {
    if (s.programs.size() != static_cast<std::size_t>(s.ranks))
      throw PpScheduleError("the schedule has " + std::to_string(s.programs.size()) +
                            " programs for " + std::to_string(s.ranks) + " ranks");
    check_duration();
    result.busy.assign(static_cast<std::size_t>(s.ranks), {});
    if (options.keep_timeline) result.slices.reserve(work_items_of(s));
    for (int r = 0; r < s.ranks; ++r) {
      result.tracks.push_back(PpTrack{"stage " + std::to_string(r), r, -1, -1});
      ready_.push_back(std::make_unique<Event>());
      streams_.push_back(device_.make_stream("stage " + std::to_string(r)));
      observers_.push_back(
          std::make_unique<TrackObserver>(rec_, static_cast<std::size_t>(r), r, window_.add()));
      streams_.back()->set_observer(observers_.back().get());
      done_.emplace_back(2 * static_cast<std::size_t>(s.microbatches) * s.chunks, false);
    }
    pc_.assign(static_cast<std::size_t>(s.ranks), 0);
    posted_.assign(static_cast<std::size_t>(s.ranks), false);
  }

  ~Simulation() {
    // Streams go before the events they may still be registered with.
    for (auto& l : links_) l.stream.reset();
    streams_.clear();
  }

  void run() {
    std::deque<int> runnable;
    for (int r = 0; r < s_.ranks; ++r) runnable.push_back(r);
    SimScheduler& clock = *device_.virtual_time();
    std::vector<std::size_t> resumable;
    for (;;) {
      while (!runnable.empty()) {
        const int r = runnable.front();
        runnable.pop_front();
        advance(r, runnable);
      }
      // Virtual time runs until a stream's queue is down to half its window (its rank or link
      // is fed more), or until everything queued has run: then every rank has finished or
      // waits for a partner.
      if (!clock.drive_until([&] { return window_.any_resumable(); }, Clock::time_point::max()))
        break;
      window_.take_resumable(resumable);
      for (const std::size_t queue : resumable) {
        if (queue < static_cast<std::size_t>(s_.ranks))
          runnable.push_back(static_cast<int>(queue));  // the ranks' queues come first
        else
          feed(*link_of_queue_[queue - static_cast<std::size_t>(s_.ranks)]);
      }
    }
    std::vector<PpDeadlock::Wait> stuck;
    for (int r = 0; r < s_.ranks; ++r)
      if (pc_[static_cast<std::size_t>(r)] < program(r).size()) stuck.push_back(why_stuck(r));
    if (!stuck.empty()) throw PpDeadlock(std::move(stuck));
    for (const Link& l : links_)
      if (!l.unreceived.empty())
        throw PpScheduleError(
            "rank " + std::to_string(l.from) + " sends " + std::to_string(l.unreceived.size()) +
            " message(s) to rank " + std::to_string(l.to) + " that rank " + std::to_string(l.to) +
            " never receives (the first: " + message_name(l.unreceived.front()) + ")");
    for (int r = 0; r < s_.ranks; ++r) check_all_computed(r);
    // Everything is queued in dependency order: the streams can now run to the end.
    for (auto& stream : streams_) stream->synchronize();
    for (auto& l : links_) l.stream->synchronize();
  }

 private:
  const std::vector<PpAction>& program(int r) const {
    return s_.programs[static_cast<std::size_t>(r)];
  }
  // A timeline never stands still while work is left, so it is at most all its work one item
  // after another: past max_pp_sim_us that could overflow the nanosecond clock (the latency
  // then read 9.2e15 us and the bubble 1.3), so such a schedule is refused before it runs.
  void check_duration() const {
    double serial_us = 0;
    const auto us = [](Clock::duration d) {
      return std::chrono::duration<double, std::micro>(d).count();
    };
    for (int r = 0; r < s_.ranks; ++r)
      for (const PpAction& a : program(r)) {
        if (a.kind == Kind::send) serial_us += us(comm_);
        if (a.kind != Kind::compute) continue;
        serial_us += us((a.pass == PpPass::forward ? fwd_ : bwd_)[static_cast<std::size_t>(r)]);
      }
    if (serial_us > max_pp_sim_us)
      throw std::invalid_argument("the schedule's work adds up to " +
                                  detail::number_text(serial_us) +
                                  " us one item after another, more than the " +
                                  detail::number_text(max_pp_sim_us) + " us a simulation may span");
  }

  std::string message_name(const Message& m) const {
    return describe(PpAction{Kind::compute, m.pass, m.microbatch, m.chunk, -1}, s_.chunks);
  }

  Link& link(int from, int to) {
    const auto key = static_cast<std::int64_t>(from) * s_.ranks + to;
    if (const auto it = link_index_.find(key); it != link_index_.end()) return links_[it->second];
    const std::string name = "link " + std::to_string(from) + "->" + std::to_string(to);
    const std::size_t track = rec_.result.tracks.size();
    rec_.result.tracks.push_back(PpTrack{name, -1, from, to});
    const std::size_t queue = window_.add();
    Link& l = links_.emplace_back(Link{from,
                                       to,
                                       queue,
                                       device_.make_stream(name),
                                       std::make_unique<TrackObserver>(rec_, track, -1, queue),
                                       std::make_unique<Event>(),
                                       std::make_unique<Event>(),
                                       {},
                                       {},
                                       0,
                                       0,
                                       0,
                                       0,
                                       {}});
    l.stream->set_observer(l.observer.get());
    link_of_queue_.push_back(&l);
    link_index_.emplace(key, links_.size() - 1);
    return l;
  }

  void check_action(int r, std::size_t pc, const PpAction& a) {
    const auto where = [&] { return rank_action(r, pc, describe(a, s_.chunks)); };
    if (a.microbatch < 0 || a.microbatch >= s_.microbatches || a.chunk < 0 || a.chunk >= s_.chunks)
      throw PpScheduleError(where() + ": microbatch or chunk out of range");
    if (a.kind != Kind::compute && (a.peer < 0 || a.peer >= s_.ranks || a.peer == r))
      throw PpScheduleError(where() + ": peer " + std::to_string(a.peer) +
                            " is not another rank in 0.." + std::to_string(s_.ranks - 1));
  }

  // Queues the link's sent transfers on its stream, as many as its window takes.
  void feed(Link& l) {
    while (!l.unqueued.empty()) {
      if (window_.full(l.queue)) {
        window_.pause(l.queue);
        return;
      }
      const Transfer t = l.unqueued.front();
      l.unqueued.pop_front();
      const std::uint64_t k = ++l.queued;
      l.stream->wait(*ready_[static_cast<std::size_t>(l.from)], t.ready);
      if (rendezvous_) l.stream->wait(*l.posted, k);
      l.stream->enqueue_work(comm_, WorkTag{t.code, t.microbatch});
      l.stream->record(*l.delivered);
      window_.queued(l.queue);
    }
  }

  void wake(Link& l, std::deque<int>& runnable) {
    for (int r : l.waiting) runnable.push_back(r);
    l.waiting.clear();
  }

  // Queues rank r's actions until one needs a partner that has not come yet.
  void advance(int r, std::deque<int>& runnable) {
    const auto ri = static_cast<std::size_t>(r);
    Stream& stream = *streams_[ri];
    const auto& prog = program(r);
    for (std::size_t& pc = pc_[ri]; pc < prog.size(); ++pc) {
      if (window_.full(ri)) {
        window_.pause(ri);
        return;
      }
      const PpAction& a = prog[pc];
      check_action(r, pc, a);
      const Message msg{a.pass, a.microbatch, a.chunk};
      if (!s_.backward && a.pass == PpPass::backward)
        throw PpScheduleError(rank_action(r, pc, describe(a, s_.chunks)) +
                              ": a backward in a forward-only schedule");
      if (a.kind == Kind::compute) {
        mark_computed(r, pc, a);
        const auto& cost = a.pass == PpPass::forward ? fwd_ : bwd_;
        stream.enqueue_work(cost[ri], WorkTag{static_cast<std::uint64_t>(2 * a.chunk) +
                                                  (a.pass == PpPass::backward ? 1U : 0U),
                                              a.microbatch});
        window_.queued(ri);
      } else if (a.kind == Kind::send) {
        Link& l = link(r, a.peer);
        const std::uint64_t k = l.sent + 1;
        if (rendezvous_ && l.posted_count < k) {
          l.waiting.push_back(r);
          return;
        }
        const Transfer t{stream.record(*ready_[ri]),
                         static_cast<std::uint32_t>(2 * s_.chunks + 2 * a.chunk) +
                             (a.pass == PpPass::backward ? 1U : 0U),
                         a.microbatch};
        l.unqueued.push_back(t);
        feed(l);
        // Delivery k may not be armed yet (transfer k waits its turn in `unqueued`): a wait
        // for a generation still to be recorded holds until it is recorded and completes.
        if (rendezvous_) stream.wait(*l.delivered, k);
        l.unreceived.push_back(msg);
        ++l.sent;
        wake(l, runnable);
      } else {
        Link& l = link(a.peer, r);
        const std::uint64_t k = l.received + 1;
        if (rendezvous_ && !posted_[ri]) {
          stream.record(*l.posted);
          ++l.posted_count;
          posted_[ri] = true;
          wake(l, runnable);
        }
        if (l.sent < k) {
          l.waiting.push_back(r);
          return;
        }
        if (!(l.unreceived.front() == msg))
          throw PpScheduleError(rank_action(r, pc, describe(a, s_.chunks)) + " expects " +
                                message_name(msg) + ", but message " + std::to_string(k) +
                                " rank " + std::to_string(a.peer) + " sends it is " +
                                message_name(l.unreceived.front()));
        stream.wait(*l.delivered, k);
        l.unreceived.pop_front();
        ++l.received;
        posted_[ri] = false;
      }
    }
  }

  std::size_t slot(const PpAction& a) const {
    return (static_cast<std::size_t>(a.microbatch) * s_.chunks + a.chunk) * 2 +
           (a.pass == PpPass::backward ? 1 : 0);
  }

  void mark_computed(int r, std::size_t pc, const PpAction& a) {
    auto& done = done_[static_cast<std::size_t>(r)];
    const auto where = [&] { return rank_action(r, pc, describe(a, s_.chunks)); };
    if (done[slot(a)]) throw PpScheduleError(where() + ": computed twice");
    if (a.pass == PpPass::backward && !done[slot(a) - 1])
      throw PpScheduleError(where() + ": the backward comes before its forward");
    done[slot(a)] = true;
  }

  void check_all_computed(int r) const {
    const auto& done = done_[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < done.size(); ++i)
      if (!done[i] && (s_.backward || i % 2 == 0)) {
        const auto pass = i % 2 == 0 ? PpPass::forward : PpPass::backward;
        const int chunk = static_cast<int>((i / 2) % static_cast<std::size_t>(s_.chunks));
        const int mb = static_cast<int>(i / 2 / static_cast<std::size_t>(s_.chunks));
        throw PpScheduleError("rank " + std::to_string(r) + " never computes " +
                              message_name(Message{pass, mb, chunk}));
      }
  }

  PpDeadlock::Wait why_stuck(int r) {
    const std::size_t pc = pc_[static_cast<std::size_t>(r)];
    const PpAction& a = program(r)[pc];
    PpDeadlock::Wait w{r, pc, describe(a, s_.chunks), {}};
    const int peer = a.peer;
    const auto peer_state = [&] {
      const std::size_t ppc = pc_[static_cast<std::size_t>(peer)];
      if (ppc >= program(peer).size())
        return "rank " + std::to_string(peer) + " has finished its program";
      return rank_action(peer, ppc, describe(program(peer)[ppc], s_.chunks)) + " waits too";
    };
    if (a.kind == Kind::send) {
      w.waits_for = "rank " + std::to_string(peer) + " to reach the matching recv; " + peer_state();
    } else {
      const Link& l = link(peer, r);
      w.waits_for = "rank " + std::to_string(peer) + " to send it (" + std::to_string(l.sent) +
                    " of its messages to rank " + std::to_string(r) + " taken); " + peer_state();
    }
    return w;
  }

  const PpSchedule& s_;
  std::vector<Clock::duration> fwd_, bwd_;
  Clock::duration comm_;
  bool rendezvous_;
  detail::QueueWindow
      window_;  // ranks' queues first (id = rank), then the links' in creation order
  Recorder rec_;
  SimDevice device_;                           // its own SimScheduler: virtual time starts at zero
  std::vector<std::unique_ptr<Event>> ready_;  // generation g: the rank's work before send g
  std::deque<Link> links_;  // a deque: links keep their address as more are added
  std::unordered_map<std::int64_t, std::size_t> link_index_;
  std::vector<Link*> link_of_queue_;  // by QueueWindow id - ranks
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<TrackObserver>> observers_;
  std::vector<std::vector<bool>> done_;  // per rank: (microbatch, chunk, pass) computed
  std::vector<std::size_t> pc_;          // per rank: the next action to queue
  std::vector<bool> posted_;             // rendezvous: the rank's current recv is posted
};

std::string deadlock_message(const std::vector<PpDeadlock::Wait>& waits) {
  std::string m = "the pipeline schedule deadlocks: " + std::to_string(waits.size()) +
                  " rank(s) can never finish";
  for (const auto& w : waits)
    m += "\n  " + rank_action(w.rank, w.action, w.at) + " waits for " + w.waits_for;
  return m;
}

}  // namespace

PpDeadlock::PpDeadlock(std::vector<Wait> waits)
    : std::runtime_error(deadlock_message(waits)), waits_(std::move(waits)) {}

double PpSimResult::latency_us() const noexcept {
  return std::chrono::duration<double, std::micro>(latency).count();
}

double PpSimResult::bubble_fraction() const noexcept {
  if (busy.empty() || latency <= Clock::duration::zero()) return 0;
  double busy_total = 0;
  for (auto b : busy) busy_total += std::chrono::duration<double>(b).count();
  const double capacity = std::chrono::duration<double>(latency).count() * busy.size();
  return std::max(0.0, 1.0 - busy_total / capacity);
}

PpSimResult simulate_pp(const PpSchedule& schedule, const PpCosts& costs,
                        const PpSimOptions& options) {
  // Checked before anything is sized or divided by them.
  if (schedule.ranks < 1)
    throw PpScheduleError("the schedule has ranks " + std::to_string(schedule.ranks) +
                          "; it needs at least 1");
  if (schedule.chunks < 1)
    throw PpScheduleError("the schedule has chunks " + std::to_string(schedule.chunks) +
                          "; each rank holds at least 1 model chunk");
  if (schedule.microbatches < 0)
    throw PpScheduleError("the schedule has microbatches " + std::to_string(schedule.microbatches) +
                          "; it cannot be negative");
  PpSimResult result;
  Simulation sim(schedule, costs, options, result);
  sim.run();
  return result;
}

}  // namespace swp
