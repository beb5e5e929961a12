#pragma once
// seq_cst_fence: the store-load barrier of the scheduler's wake-up protocols.

namespace swp::detail {

/// A sequentially consistent fence (std::atomic_thread_fence(seq_cst)). The scheduler and
/// EventCount use it for the store-buffering pattern only (store the condition, fence, load
/// the waiter count / store the registration, load the condition), never to create
/// happens-before edges: those all come from acquire/release on the atomics themselves. That
/// is why it is fine that ThreadSanitizer does not model fences, and why GCC's warning saying
/// so (-Wtsan, in every file that includes a notifier) is silenced here (and by -Wno-tsan in
/// ThreadSanitizer builds: the pragma does not survive a precompiled header, see meson.build).
inline void seq_cst_fence() noexcept {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

}  // namespace swp::detail
