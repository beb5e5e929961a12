#include "swp/comm/input_dist.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "swp/device/stream.hpp"

namespace swp {

namespace {

// Hands a batch's state to each of its communicators' keep_until_done once the batch's
// collectives were called (or a call threw, after those called before it).
struct KeepUntilDone {
  const std::vector<Communicator*>& groups;
  const std::shared_ptr<const void>& state;
  ~KeepUntilDone() {
    try {
      for (Communicator* group : groups) group->keep_until_done(state);
    } catch (...) {
      // Out of memory: the collectives' own hold on the state (when_started) is what is left.
    }
  }
};

}  // namespace

struct InputDist::Batch::State {
  struct PerModule {
    std::string name;
    Communicator* group = nullptr;
    std::size_t splits = 0;  // its splits collective
    std::size_t stride = 1;  // modules in that collective
    std::size_t slot = 0;    // its place among them
    std::vector<std::int64_t> send;
    std::vector<std::size_t> send_counts;
    ModuleOutput out;
    Future<void> tensors;
    bool taken = false;
    // A module of a batch started with DeviceModuleInput: the caller's buffers, and where
    // its ids arrived (out.from_rank counts them).
    bool on_device = false;
    const std::int64_t* device_send = nullptr;
    std::int64_t* device_recv = nullptr;
    std::size_t recv_capacity = 0;
  };
  std::vector<PerModule> modules;
  std::vector<std::vector<std::int64_t>> splits_send, splits_recv;
  std::vector<Future<void>> splits;

  // Goes with the last of: the Batch handles, the tensors' queued operations (their
  // when_started holds it) and the communicators' keep_until_done, which keeps it while a
  // collective of the batch that failed (timed out, given up by an abort) may still write it.
  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  PerModule& find(std::string_view name) {
    for (PerModule& m : modules)
      if (m.name == name) return m;
    throw std::out_of_range("InputDist batch: no module '" + std::string(name) + "'");
  }
};

std::span<const std::int64_t> ModuleOutput::from(int rank) const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= from_rank.size())
    throw std::out_of_range("ModuleOutput::from: rank " + std::to_string(rank) + " of a group of " +
                            std::to_string(from_rank.size()));
  std::size_t at = 0;
  for (int r = 0; r < rank; ++r) at += from_rank[static_cast<std::size_t>(r)];
  return std::span<const std::int64_t>(values).subspan(at,
                                                       from_rank[static_cast<std::size_t>(rank)]);
}

std::size_t DeviceModuleOutput::size() const noexcept {
  std::size_t n = 0;
  for (std::size_t c : from_rank) n += c;
  return n;
}

std::pair<std::int64_t*, std::size_t> DeviceModuleOutput::from(int rank) const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= from_rank.size())
    throw std::out_of_range("DeviceModuleOutput::from: rank " + std::to_string(rank) +
                            " of a group of " + std::to_string(from_rank.size()));
  std::size_t at = 0;
  for (int r = 0; r < rank; ++r) at += from_rank[static_cast<std::size_t>(r)];
  return {values + at, from_rank[static_cast<std::size_t>(rank)]};
}

InputDist::InputDist(Options options) : options_(options) {}

InputDist& InputDist::add_module(std::string name, Communicator& group) {
  if (name.empty()) throw std::invalid_argument("InputDist::add_module: a module needs a name");
  for (const Module& m : modules_)
    if (m.name == name)
      throw std::invalid_argument("InputDist::add_module: module '" + name + "' added twice");
  const auto it = std::find(groups_.begin(), groups_.end(), &group);
  const auto g = static_cast<std::size_t>(it - groups_.begin());
  if (it == groups_.end()) groups_.push_back(&group);
  const auto in_group = static_cast<std::size_t>(std::count_if(
      modules_.begin(), modules_.end(), [&](const Module& m) { return m.group == g; }));
  modules_.push_back({std::move(name), g, in_group});
  return *this;
}

std::size_t InputDist::splits_collectives() const noexcept {
  return options_.fuse_splits ? groups_.size() : modules_.size();
}

namespace {

// How many ids `input` sends each rank, and checks of its buffers.
const std::vector<std::vector<std::int64_t>>& per_rank(const ModuleInput& input) {
  return input.to_rank;
}
const std::vector<std::size_t>& per_rank(const DeviceModuleInput& input) { return input.to_rank; }

void check_buffers(const ModuleInput&, const std::string&, const std::string&) {}
void check_buffers(const DeviceModuleInput& input, const std::string& module,
                   const std::string& prefix) {
  std::size_t sending = 0;
  for (std::size_t n : input.to_rank) sending += n;
  if (sending > 0 && input.ids == nullptr)
    throw std::invalid_argument(prefix + ": module '" + module + "' sends " +
                                std::to_string(sending) + " ids from a null ids buffer");
  if (input.recv_capacity > 0 && input.recv == nullptr)
    throw std::invalid_argument(prefix + ": module '" + module + "' has room for " +
                                std::to_string(input.recv_capacity) + " ids in a null recv buffer");
}

}  // namespace

InputDist::Batch InputDist::start(Stream& stream, std::map<std::string, ModuleInput> inputs,
                                  std::string_view what) {
  return start_batch(stream, inputs, what);
}

InputDist::Batch InputDist::start_on_device(Stream& stream,
                                            std::map<std::string, DeviceModuleInput> inputs,
                                            std::string_view what) {
  return start_batch(stream, inputs, what);
}

template <class Input>
InputDist::Batch InputDist::start_batch(Stream& stream, std::map<std::string, Input>& inputs,
                                        std::string_view what) {
  constexpr bool on_device = std::is_same_v<Input, DeviceModuleInput>;
  const std::string prefix = std::string(what.empty() ? "InputDist" : what);
  if (modules_.empty()) throw std::invalid_argument(prefix + ": no module was added");
  // (Not a structured binding: clang before 16 cannot capture one in the lambda.)
  for (const auto& entry : inputs) {
    const std::string& name = entry.first;
    if (std::none_of(modules_.begin(), modules_.end(),
                     [&](const Module& m) { return m.name == name; }))
      throw std::invalid_argument(prefix + ": an input for '" + name +
                                  "', which is no module of this InputDist");
  }
  for (const Module& m : modules_) {
    const auto it = inputs.find(m.name);
    if (it == inputs.end())
      throw std::invalid_argument(prefix + ": no input for module '" + m.name + "'");
    const auto ranks = static_cast<std::size_t>(groups_[m.group]->size());
    if (per_rank(it->second).size() != ranks)
      throw std::invalid_argument(prefix + ": module '" + m.name + "' has ids for " +
                                  std::to_string(per_rank(it->second).size()) +
                                  " ranks; its process group has " + std::to_string(ranks));
    check_buffers(it->second, m.name, prefix);
  }

  auto state = std::make_shared<Batch::State>();
  // Splits collectives: one per group (fused) or one per module, each with `stride` counts
  // per rank: send[r * stride + slot] = how many ids the module in `slot` sends rank r.
  std::vector<Communicator*> splits_group;
  for (const Module& m : modules_) {
    Batch::State::PerModule pm;
    pm.name = m.name;
    pm.group = groups_[m.group];
    if (options_.fuse_splits) {
      pm.splits = m.group;
      pm.slot = m.in_group;
      pm.stride = static_cast<std::size_t>(std::count_if(
          modules_.begin(), modules_.end(), [&](const Module& o) { return o.group == m.group; }));
    } else {
      pm.splits = state->modules.size();
    }
    Input& input = inputs[m.name];
    if constexpr (on_device) {
      pm.on_device = true;
      pm.send_counts = input.to_rank;
      pm.device_send = input.ids;
      pm.device_recv = input.recv;
      pm.recv_capacity = input.recv_capacity;
    } else {
      for (auto& ids : input.to_rank) {
        pm.send_counts.push_back(ids.size());
        pm.send.insert(pm.send.end(), ids.begin(), ids.end());
      }
    }
    state->modules.push_back(std::move(pm));
  }
  const std::size_t collectives = splits_collectives();
  state->splits_send.resize(collectives);
  state->splits_recv.resize(collectives);
  splits_group.resize(collectives);
  for (const auto& pm : state->modules) {
    const auto ranks = static_cast<std::size_t>(pm.group->size());
    auto& send = state->splits_send[pm.splits];
    send.resize(ranks * pm.stride);
    state->splits_recv[pm.splits].resize(ranks * pm.stride);
    for (std::size_t r = 0; r < ranks; ++r)
      send[r * pm.stride + pm.slot] = static_cast<std::int64_t>(pm.send_counts[r]);
    splits_group[pm.splits] = pm.group;
  }

  // Each group keeps the buffers until none of the batch's collectives can touch them any more
  // (a failed one may still be under way in the backend: MPI cannot withdraw it).
  const std::shared_ptr<const void> kept = state;
  const KeepUntilDone keep{groups_, kept};
  // Level 1: the splits, in group order; then level 2: each module's tensors, whose receive
  // counts are read from the splits when the exchange starts (after them on the stream).
  for (std::size_t c = 0; c < collectives; ++c) {
    const std::string name =
        options_.fuse_splits ? prefix + " splits" : prefix + " splits " + state->modules[c].name;
    state->splits.push_back(
        splits_group[c]->all_to_all(stream, std::span<const std::int64_t>(state->splits_send[c]),
                                    std::span<std::int64_t>(state->splits_recv[c]), name));
  }
  for (std::size_t i = 0; i < state->modules.size(); ++i) {
    auto& pm = state->modules[i];
    // The operation holds the state (its buffers) until it completed.
    pm.tensors = pm.group->all_to_all_v(
        stream,
        [state_ref = state, i]() -> AllToAllVBuffers {
          Batch::State& s = *state_ref;
          auto& m = s.modules[i];
          const Future<void>& splits = s.splits[m.splits];
          if (splits.ready() && splits.error_ptr()) std::rethrow_exception(splits.error_ptr());
          const auto& recv = s.splits_recv[m.splits];
          const std::size_t ranks = recv.size() / m.stride;
          m.out.from_rank.resize(ranks);
          std::size_t total = 0;
          for (std::size_t r = 0; r < ranks; ++r) {
            const std::int64_t n = recv[r * m.stride + m.slot];
            if (n < 0)
              throw std::runtime_error("rank " + std::to_string(r) + " announced " +
                                       std::to_string(n) + " ids for module '" + m.name + "'");
            m.out.from_rank[r] = static_cast<std::size_t>(n);
            total += m.out.from_rank[r];
          }
          if (m.on_device) {
            if (total > m.recv_capacity)
              throw std::runtime_error("module '" + m.name + "' receives " + std::to_string(total) +
                                       " ids; its recv buffer holds " +
                                       std::to_string(m.recv_capacity));
            return {m.device_send, m.send_counts, m.device_recv, m.out.from_rank};
          }
          m.out.values.resize(total);
          return {m.send.data(), m.send_counts, m.out.values.data(), m.out.from_rank};
        },
        DataType::i64, prefix + " " + pm.name);
  }
  return Batch(std::move(state));
}

const std::vector<Future<void>>& InputDist::Batch::splits() const {
  if (!state_) throw std::logic_error("InputDist::Batch: an empty batch (not from start)");
  return state_->splits;
}

Future<void> InputDist::Batch::tensors(std::string_view module) const {
  if (!state_) throw std::logic_error("InputDist::Batch: an empty batch (not from start)");
  return state_->find(module).tensors;
}

ModuleOutput InputDist::Batch::take(std::string_view module) {
  if (!state_) throw std::logic_error("InputDist::Batch: an empty batch (not from start)");
  auto& m = state_->find(module);
  if (m.on_device)
    throw std::logic_error("InputDist batch: module '" + m.name +
                           "' was started with device buffers: its ids are in its recv buffer "
                           "(received(), not take())");
  if (!m.tensors.ready())
    throw std::logic_error("InputDist batch: module '" + m.name +
                           "' is taken before its tensors arrived (await tensors() first)");
  m.tensors.get();  // rethrows the exchange's error
  if (m.taken) throw std::logic_error("InputDist batch: module '" + m.name + "' taken twice");
  m.taken = true;
  return std::move(m.out);
}

DeviceModuleOutput InputDist::Batch::received(std::string_view module) const {
  if (!state_) throw std::logic_error("InputDist::Batch: an empty batch (not from start)");
  auto& m = state_->find(module);
  if (!m.on_device)
    throw std::logic_error("InputDist batch: module '" + m.name +
                           "' was started with host vectors: take() hands its ids over");
  if (!m.tensors.ready())
    throw std::logic_error("InputDist batch: module '" + m.name +
                           "' is read before its tensors arrived (await tensors() first)");
  m.tensors.get();  // rethrows the exchange's error
  return {m.device_recv, m.out.from_rank};
}

}  // namespace swp
