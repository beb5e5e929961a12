#include "swp/engine/errors.hpp"

namespace swp {

namespace {
// "<who> failed in iteration <iter>: <what the cause says>".
std::string describe(const std::string& who, std::int64_t iter, const std::exception_ptr& e) {
  std::string what = "unknown exception";
  try {
    if (e) std::rethrow_exception(e);
  } catch (const std::exception& x) {
    what = x.what();
  } catch (...) {
  }
  // -1: a batch handed back without an iteration (never admitted).
  return who + (iter < 0 ? " failed for a batch never admitted" : " failed in iteration " +
                                                                      std::to_string(iter)) +
         ": " + what;
}
}  // namespace

TaskError::TaskError(std::string task, std::int64_t iter, std::exception_ptr cause)
    : std::runtime_error(describe("task '" + task + "'", iter, cause)),
      task_(std::move(task)),
      iter_(iter),
      cause_(std::move(cause)) {}

namespace {
const char* callback_name(CallbackError::Callback callback) {
  switch (callback) {
    case CallbackError::Callback::source: return "the batch source";
    case CallbackError::Callback::on_retire: return "on_retire";
    case CallbackError::Callback::on_failure: return "on_failure";
  }
  return "a callback";
}
}  // namespace

CallbackError::CallbackError(Callback callback, std::int64_t iter, std::exception_ptr cause,
                             const std::string& context)
    : std::runtime_error(describe(callback_name(callback), iter, cause) +
                         (context.empty() ? "" : " (" + context + ")")),
      callback_(callback),
      iter_(iter),
      cause_(std::move(cause)) {}

}  // namespace swp
