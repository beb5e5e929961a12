#pragma once
// Sources: where a pipeline takes its batches from — a range, a callable returning
// std::optional<Batch>, a coroutine that may wait for its next batch, or a Channel.

#include <concepts>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "swp/async/channel.hpp"
#include "swp/async/co.hpp"

namespace swp {

/// The batches of a run, one call per iteration: a batch, or an empty optional at end of
/// data. Pipelines call it on the thread that admits an iteration (the caller of progress()),
/// one call at a time.
template <class Batch>
using Source = std::function<std::optional<Batch>()>;

/// A source that can say "nothing yet": each call starts a coroutine that completes with the
/// next batch, or an empty optional at end of data, and may suspend meanwhile (on a channel, a
/// socket read, a future). A pipeline keeps running the iterations in flight while it waits.
template <class Batch>
using AsyncSource = std::function<Co<std::optional<Batch>>()>;

/// What `make_source<Batch>` (and so `run_serial`) accepts: a callable returning
/// std::optional<Batch>, or an input range whose elements a Batch can be made from. Called
/// synchronously: the call returns the batch.
template <class S, class Batch>
concept PullSourceOf =
    std::is_invocable_r_v<std::optional<Batch>, std::remove_cvref_t<S>&> ||
    (std::ranges::input_range<S> && std::constructible_from<Batch, std::ranges::range_reference_t<S>>);

/// A callable whose call starts a coroutine yielding the next batch (see AsyncSource).
template <class S, class Batch>
concept AwaitableSourceOf =
    std::is_invocable_r_v<Co<std::optional<Batch>>, std::remove_cvref_t<S>&>;

/// A Channel of Batch, by reference (it must outlive the run): the push form.
template <class S, class Batch>
concept ChannelSourceOf =
    std::is_lvalue_reference_v<S> && std::same_as<std::remove_cvref_t<S>, Channel<Batch>>;

/// What `fill_pipeline`, `iterations` and `run` accept: a pull source, an awaitable source, or
/// a Channel<Batch> (received from until it is closed and empty).
template <class S, class Batch>
concept SourceOf = PullSourceOf<S, Batch> || AwaitableSourceOf<S, Batch> || ChannelSourceOf<S, Batch>;

/// Makes the Source of `source`. Who owns what (the rule of std::views::all, and of
/// std::function for callables; fill_pipeline, iterations and run follow it too):
///
/// | passed | kept as | the caller must |
/// |---|---|---|
/// | a named range (`fill_pipeline(batches)`) | borrowed: iterated in place, each element copied | keep it alive and unchanged until the run ends |
/// | a temporary range (`fill_pipeline(std::move(batches))`, `make_batches()`) | owned: moved in, each element moved out as it is handed over | nothing |
/// | a callable, named or not | owned: a copy (as std::function keeps one) | pass `std::ref(loader)` to share one object (then keep it alive) |
/// | a `Channel<Batch>&` | borrowed | keep it alive until the run ends |
///
/// A named range is borrowed, not copied, because copying a dataset's batches to run over
/// them is rarely wanted and costs memory; to hand it over, pass `std::move(batches)`; to keep
/// a copy of your own, pass `std::vector(batches)`.
///
/// Completion: nothing is read here; each call of the Source reads one batch.
/// Errors: what the callable or the range's iterator throws propagates from the call; in a
/// pipeline it fails the run, as CallbackError (see errors.hpp for the call it surfaces
/// from). A source of the wrong type does not compile.
/// Example:
/// ```
/// std::vector<int> batches{1, 2, 3};
/// swp::Source<int> next = swp::make_source<int>(batches);
/// while (auto batch = next()) use(*batch);
/// ```
template <class Batch, PullSourceOf<Batch> S>
Source<Batch> make_source(S&& source) {
  if constexpr (std::is_invocable_r_v<std::optional<Batch>, std::remove_cvref_t<S>&>) {
    return Source<Batch>(std::forward<S>(source));
  } else {
    using Owned = std::remove_cvref_t<S>;
    constexpr bool owns = !std::is_lvalue_reference_v<S>;
    std::shared_ptr<Owned> owned;
    if constexpr (owns) owned = std::make_shared<Owned>(std::move(source));
    auto& range = owned ? *owned : source;
    return [owned, it = std::ranges::begin(range),
            end = std::ranges::end(range)]() mutable -> std::optional<Batch> {
      if (it == end) return std::nullopt;
      // A range the source owns gives its batches away (nobody else sees it): the source
      // keeps no copy of a batch alive; a borrowed range is only read.
      std::optional<Batch> batch;
      if constexpr (owns) {
        batch.emplace(std::move(*it));
      } else {
        batch.emplace(*it);
      }
      ++it;
      return batch;
    };
  }
}

}  // namespace swp
