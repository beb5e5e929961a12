#pragma once
// Names from plans reach terminals and line-based outputs (`swp order` prints one per line)
// and plan files (JSON, UTF-8): what tells whether a name holds a control character or is no
// UTF-8, a form of it safe to print, and one that is UTF-8 (for JSON writers).

#include <cstddef>
#include <string>
#include <string_view>

namespace swp::detail {

/// A one-byte control character: C0 (NUL, newline, ESC, ...) or DEL (C1 and the separators:
/// unicode_control).
[[nodiscard]] constexpr bool is_control(char c) noexcept {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

/// The control character U+0080..U+009F (C1: NEL, CSI, ...) or the line or paragraph
/// separator U+2028, U+2029, as UTF-8 at the start of `text`: terminals act on them and
/// line-based readers split lines at them, as at a newline. Returns its length, 0 for none.
[[nodiscard]] constexpr std::size_t unicode_control(std::string_view text) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  if (text.size() >= 2 && byte(0) == 0xc2 && byte(1) >= 0x80 && byte(1) <= 0x9f) return 2;
  if (text.size() >= 3 && byte(0) == 0xe2 && byte(1) == 0x80 &&
      (byte(2) == 0xa8 || byte(2) == 0xa9))
    return 3;
  return 0;
}

/// Whether `text` holds a control character: C0, DEL, C1, U+2028 or U+2029.
[[nodiscard]] constexpr bool has_control_character(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size(); ++i)
    if (is_control(text[i]) || unicode_control(text.substr(i)) != 0) return true;
  return false;
}

/// The length (2..4) of the well-formed UTF-8 sequence of a non-ASCII character at the start
/// of `text`, or 0 where there is none: a stray continuation byte, an overlong form, a
/// surrogate, a code point past U+10FFFF, a sequence cut short (RFC 3629).
[[nodiscard]] constexpr std::size_t utf8_sequence(std::string_view text) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto continuation = [&](std::size_t i) {
    return i < text.size() && (byte(i) & 0xc0) == 0x80;
  };
  if (text.empty()) return 0;
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // overlong
    if (lead == 0xed) high = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // overlong
    if (lead == 0xf4) high = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (!continuation(1) || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (!continuation(i)) return 0;
  return length;
}

/// Whether `text` is well-formed UTF-8, as JSON text (and so a plan file) must be.
[[nodiscard]] constexpr bool is_utf8(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
    } else if (const std::size_t n = utf8_sequence(text.substr(i)); n != 0) {
      i += n;
    } else {
      return false;
    }
  }
  return true;
}

/// What stands for a byte that is no part of well-formed UTF-8: U+FFFD, the replacement
/// character, as UTF-8.
inline constexpr std::string_view replacement_character = "\uFFFD";

/// `text` as well-formed UTF-8, as a format that must be UTF-8 (JSON) needs it: every byte
/// that is no part of well-formed UTF-8 (utf8_sequence) becomes one U+FFFD, everything else
/// (ASCII, control characters included, and well-formed sequences) stays as it is.
[[nodiscard]] inline std::string valid_utf8(std::string_view text) {
  if (is_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      out += text[i++];
    } else if (const std::size_t n = utf8_sequence(text.substr(i)); n != 0) {
      out += text.substr(i, n);
      i += n;
    } else {
      out += replacement_character;
      ++i;
    }
  }
  return out;
}

/// `text` with every control character written as an escape (\n, \t, \r, \uHHHH for C1,
/// U+2028 and U+2029, else \xHH), and every byte that is no part of well-formed UTF-8 as \xHH.
[[nodiscard]] inline std::string printable(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  const auto escape_byte = [&](char c) {
    const auto u = static_cast<unsigned char>(c);
    out += "\\x";
    out += hex[u >> 4];
    out += hex[u & 15];
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const std::size_t n = utf8_sequence(text.substr(i));
      if (n == 0) {
        escape_byte(c);
      } else if (unicode_control(text.substr(i)) != 0) {
        const unsigned code = n == 2 ? (static_cast<unsigned char>(text[i]) & 0x1fU) << 6 |
                                           (static_cast<unsigned char>(text[i + 1]) & 0x3fU)
                                     : 0x2000U | (static_cast<unsigned char>(text[i + 2]) & 0x3fU);
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) out += hex[code >> shift & 15];
        i += n - 1;
      } else {
        out += text.substr(i, n);
        i += n - 1;
      }
    } else if (!is_control(c)) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      escape_byte(c);
    }
  }
  return out;
}

}  // namespace swp::detail
