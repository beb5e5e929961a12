// An LD_PRELOAD library for the CLI tests: swp's run_synthetic and profile_synthetic (libswp's,
// which `swp run` and `swp profile` call) throw a std::length_error that is no stream limit, as
// a container grown past its max_size() would. No run can make one cheaply otherwise; the tests
// check that the commands report it as any other error, without --max-host-streams's hint
// (which swp::StreamLimitError alone gets).

#include <stdexcept>

#include "swp/tune/synthetic_run.hpp"

namespace swp {

SyntheticRunResult run_synthetic(const PipelinePlan&, const SyntheticRunOptions&) {
  throw std::length_error("vector::_M_default_append");
}

ProfileResult profile_synthetic(const PipelinePlan&, const SyntheticProfileOptions&) {
  throw std::length_error("basic_string::_M_create");
}

}  // namespace swp
