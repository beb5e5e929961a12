#pragma once

// Which sanitizer instruments this translation unit, the same on g++ and clang++.
// g++ defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang 14 defines neither (it
// answers __has_feature instead), so a plain `#if defined(__SANITIZE_ADDRESS__)` silently
// takes the uninstrumented side under clang's sanitizers.
//
//   SWP_ASAN  1 under AddressSanitizer, else 0
//   SWP_TSAN  1 under ThreadSanitizer, else 0

#if defined(__SANITIZE_ADDRESS__)
#define SWP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWP_ASAN 1
#endif
#endif
#ifndef SWP_ASAN
#define SWP_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define SWP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SWP_TSAN 1
#endif
#endif
#ifndef SWP_TSAN
#define SWP_TSAN 0
#endif
