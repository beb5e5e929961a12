#pragma once
// What a pipeline's context type must offer (not for direct use): declared apart from
// pipeline.hpp so that retired.hpp can name Pipeline, which makes Retireds, as its friend.

#include <concepts>

namespace swp::detail {

template <class Ctx>
concept PipelineContext = std::default_initializable<Ctx> && std::movable<Ctx> && requires(Ctx c) {
  typename Ctx::batch_type;
  c.batch;
  c.iter_idx;
};

}  // namespace swp::detail
