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
  return who + " failed in iteration " + std::to_string(iter) + ": " + what;
}
}  // namespace

TaskError::TaskError(std::string task, std::int64_t iter, std::exception_ptr cause)
    : std::runtime_error(describe("task '" + task + "'", iter, cause)),
      task_(std::move(task)),
      iter_(iter),
      cause_(std::move(cause)) {}

CallbackError::CallbackError(Callback callback, std::int64_t iter, std::exception_ptr cause)
    : std::runtime_error(describe(callback == Callback::source ? "the batch source" : "on_retire",
                                  iter, cause)),
      callback_(callback),
      iter_(iter),
      cause_(std::move(cause)) {}

}  // namespace swp
