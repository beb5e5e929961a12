#include "swp/sim/pp_simulator.hpp"

#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

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
                                  std::to_string(v) + " us) must be finite and in 0..1e12");
    out.push_back(to_duration(v / chunks));
  }
  return out;
}

Clock::duration comm_duration(double us) {
  if (!std::isfinite(us) || us < 0 || us > 1e12)
    throw std::invalid_argument("the comm time (" + std::to_string(us) +
                                " us) must be finite and in 0..1e12");
  return to_duration(us);
}

// Records what the streams ran: one observer per track, so a slice knows its row.
struct Recorder {
  PpSimResult& result;
  bool keep;
  int chunks;
};

class TrackObserver final : public DeviceObserver {
 public:
  TrackObserver(Recorder& rec, std::size_t track, int rank)
      : rec_(rec), track_(track), rank_(rank) {}
  void device_work(const Stream&, const DeviceWork& w) noexcept override {
    const auto start = w.start - Clock::time_point{};
    const auto end = w.end - Clock::time_point{};
    rec_.result.latency = std::max(rec_.result.latency, end);
    ++rec_.result.work_items;
    if (rank_ >= 0) rec_.result.busy[static_cast<std::size_t>(rank_)] += end - start;
    if (!rec_.keep) return;
    // Tags: task = 2 · chunk + pass for computes, offset by 2 · chunks for transfers.
    const auto code = static_cast<int>(w.tag.task);
    const bool transfer = code >= 2 * rec_.chunks;
    const int c = transfer ? code - 2 * rec_.chunks : code;
    // A bad_alloc here would end the run; the observer may not throw, so it terminates.
    rec_.result.slices.push_back(PpSlice{track_, transfer, static_cast<PpPass>(c % 2),
                                         static_cast<int>(w.tag.iter), c / 2, start, end});
  }

 private:
  Recorder& rec_;
  std::size_t track_;
  int rank_;
};

// A message identity: what a send says it carries and a recv says it expects.
struct Message {
  PpPass pass;
  int microbatch;
  int chunk;
  bool operator==(const Message&) const = default;
};

struct Link {
  int from, to;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<TrackObserver> observer;
  std::unique_ptr<Event> delivered;  // generation k: the k-th message arrived
  std::unique_ptr<Event> posted;     // generation k: the receiver reached its k-th recv
  std::vector<Message> sent;         // in send order
  std::size_t received = 0;
  std::size_t posted_count = 0;
  std::vector<int> waiting;  // ranks blocked on this link
};

class Simulation {
 public:
  Simulation(const PpSchedule& s, const PpCosts& costs, const PpSimOptions& options,
             PpSimResult& result)
      : s_(s),
        fwd_(per_rank(costs.fwd_us, s.ranks, s.chunks, "the forward time")),
        bwd_(per_rank(costs.bwd_us, s.ranks, s.chunks, "the backward time")),
        comm_(comm_duration(costs.comm_us)),
        rendezvous_(options.send_mode == PpSendMode::rendezvous),
        rec_{result, options.keep_timeline, s.chunks} {
    if (s.programs.size() != static_cast<std::size_t>(s.ranks))
      throw PpScheduleError("the schedule has " + std::to_string(s.programs.size()) +
                            " programs for " + std::to_string(s.ranks) + " ranks");
    result.busy.assign(static_cast<std::size_t>(s.ranks), {});
    for (int r = 0; r < s.ranks; ++r) {
      result.tracks.push_back(PpTrack{"stage " + std::to_string(r), r, -1, -1});
      ready_.push_back(std::make_unique<Event>());
      streams_.push_back(device_.make_stream("stage " + std::to_string(r)));
      observers_.push_back(std::make_unique<TrackObserver>(rec_, static_cast<std::size_t>(r), r));
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
    while (!runnable.empty()) {
      const int r = runnable.front();
      runnable.pop_front();
      advance(r, runnable);
    }
    std::vector<PpDeadlock::Wait> stuck;
    for (int r = 0; r < s_.ranks; ++r)
      if (pc_[static_cast<std::size_t>(r)] < program(r).size()) stuck.push_back(why_stuck(r));
    if (!stuck.empty()) throw PpDeadlock(std::move(stuck));
    for (const Link& l : links_)
      if (l.received < l.sent.size())
        throw PpScheduleError("rank " + std::to_string(l.from) + " sends " +
                              std::to_string(l.sent.size() - l.received) + " message(s) to rank " +
                              std::to_string(l.to) + " that rank " + std::to_string(l.to) +
                              " never receives (the first: " + message_name(l.sent[l.received]) +
                              ")");
    for (int r = 0; r < s_.ranks; ++r) check_all_computed(r);
    // Everything is queued in dependency order: the streams can now run to the end.
    for (auto& stream : streams_) stream->synchronize();
    for (auto& l : links_) l.stream->synchronize();
  }

 private:
  const std::vector<PpAction>& program(int r) const {
    return s_.programs[static_cast<std::size_t>(r)];
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
    Link& l = links_.emplace_back(Link{from,
                                       to,
                                       device_.make_stream(name),
                                       std::make_unique<TrackObserver>(rec_, track, -1),
                                       std::make_unique<Event>(),
                                       std::make_unique<Event>(),
                                       {},
                                       0,
                                       0,
                                       {}});
    l.stream->set_observer(l.observer.get());
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
      } else if (a.kind == Kind::send) {
        Link& l = link(r, a.peer);
        const std::uint64_t k = l.sent.size() + 1;
        if (rendezvous_ && l.posted_count < k) {
          l.waiting.push_back(r);
          return;
        }
        l.stream->wait(*ready_[ri], stream.record(*ready_[ri]));
        if (rendezvous_) l.stream->wait(*l.posted, k);
        l.stream->enqueue_work(comm_,
                               WorkTag{static_cast<std::uint64_t>(2 * s_.chunks + 2 * a.chunk) +
                                           (a.pass == PpPass::backward ? 1U : 0U),
                                       a.microbatch});
        l.stream->record(*l.delivered);
        if (rendezvous_) stream.wait(*l.delivered, k);
        l.sent.push_back(msg);
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
        if (l.sent.size() < k) {
          l.waiting.push_back(r);
          return;
        }
        if (!(l.sent[k - 1] == msg))
          throw PpScheduleError(rank_action(r, pc, describe(a, s_.chunks)) + " expects " +
                                message_name(msg) + ", but message " + std::to_string(k) +
                                " rank " + std::to_string(a.peer) + " sends it is " +
                                message_name(l.sent[k - 1]));
        stream.wait(*l.delivered, k);
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
      w.waits_for = "rank " + std::to_string(peer) + " to send it (" +
                    std::to_string(l.sent.size()) + " of its messages to rank " +
                    std::to_string(r) + " taken); " + peer_state();
    }
    return w;
  }

  const PpSchedule& s_;
  std::vector<Clock::duration> fwd_, bwd_;
  Clock::duration comm_;
  bool rendezvous_;
  Recorder rec_;
  SimDevice device_;                           // its own SimScheduler: virtual time starts at zero
  std::vector<std::unique_ptr<Event>> ready_;  // generation g: the rank's work before send g
  std::deque<Link> links_;  // a deque: links keep their address as more are added
  std::unordered_map<std::int64_t, std::size_t> link_index_;
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
  PpSimResult result;
  Simulation sim(schedule, costs, options, result);
  sim.run();
  return result;
}

}  // namespace swp
