#pragma once
// IterationOffer: a data-flow iteration that the driving thread runs whole in place, with
// workers, while another thread may take over the part it has not reached.

#include <cstddef>

#include "swp/engine/detail/in_place_offer.hpp"

namespace swp::detail {

class EngineCore;
struct IterationSync;

/// The InPlaceOffer of EngineCore::run_iteration_offered: the positions are the iteration's
/// serial positions, and the taker's part is EngineCore::take_over.
class IterationOffer final : public InPlaceOffer {
 public:
  explicit IterationOffer(EngineCore& core) noexcept : core_(core) {}

  /// Owner: iteration `sync` is about to run in place (see InPlaceOffer::begin).
  bool begin(IterationSync& sync) noexcept {
    sync_ = &sync;
    return InPlaceOffer::begin();
  }

 private:
  void take_over(std::size_t q) noexcept override;

  EngineCore& core_;
  IterationSync* sync_ = nullptr;
};

}  // namespace swp::detail
