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

/// How much of a UTF-8 sequence of a non-ASCII character starts a text (utf8_start).
struct Utf8Start {
  std::size_t have = 0;   ///< its bytes there, each in the range its place allows
  std::size_t needs = 0;  ///< the length (2..4) of the sequence its first byte leads
};

/// How much of a well-formed UTF-8 sequence of a non-ASCII character starts `text` (the
/// Unicode Standard's Table 3-7, RFC 3629): the bytes up to the first one out of the range
/// its place allows, or up to the end of `text`. The second byte's range rules out overlong
/// forms, surrogates and code points past U+10FFFF; later ones are continuation bytes. All 0
/// where the first byte leads no sequence: ASCII, a continuation byte, C0, C1, F5..FF.
[[nodiscard]] constexpr Utf8Start utf8_start(std::string_view text) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  if (text.empty()) return {};
  const unsigned char lead = byte(0);
  std::size_t needs = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    needs = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    needs = 3;
    if (lead == 0xe0) low = 0xa0;   // overlong
    if (lead == 0xed) high = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    needs = 4;
    if (lead == 0xf0) low = 0x90;   // overlong
    if (lead == 0xf4) high = 0x8f;  // past U+10FFFF
  } else {
    return {};
  }
  std::size_t have = 1;
  if (have < text.size() && byte(have) >= low && byte(have) <= high) {
    ++have;
    while (have < needs && have < text.size() && (byte(have) & 0xc0) == 0x80) ++have;
  }
  return {have, needs};
}

/// The length (2..4) of the well-formed UTF-8 sequence of a non-ASCII character at the start
/// of `text`, or 0 where there is none: a stray continuation byte, an overlong form, a
/// surrogate, a code point past U+10FFFF, a sequence cut short (RFC 3629).
[[nodiscard]] constexpr std::size_t utf8_sequence(std::string_view text) noexcept {
  const Utf8Start start = utf8_start(text);
  return start.have == start.needs ? start.have : 0;
}

/// Where `text` starts with no well-formed UTF-8 sequence (utf8_sequence is 0) and no ASCII
/// character: the length (1..3) of what one U+FFFD stands for, the maximal subpart of the
/// ill-formed sequence (the Unicode Standard §3.9, "U+FFFD Substitution of Maximal Subparts",
/// Table 3-8). That is the bytes of a well-formed sequence cut short (E2 82 before a byte
/// that cannot follow), else the one byte that starts no well-formed sequence: a continuation
/// byte, C0, C1, F5..FF, or a lead byte whose next byte is out of its range (the first byte of
/// an overlong form, a surrogate or a code point past U+10FFFF). Decoders that follow the
/// recommendation (the WHATWG Encoding Standard's, so browsers'; Python's) replace the same
/// way, so a name reads the same in our outputs as where they decode its raw bytes.
[[nodiscard]] constexpr std::size_t utf8_maximal_subpart(std::string_view text) noexcept {
  if (text.empty()) return 0;
  const std::size_t have = utf8_start(text).have;
  return have == 0 ? 1 : have;
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

/// What stands for a maximal subpart of ill-formed UTF-8 (utf8_maximal_subpart): U+FFFD, the
/// replacement character, as UTF-8.
inline constexpr std::string_view replacement_character = "\uFFFD";

/// `text` as well-formed UTF-8, as a format that must be UTF-8 (JSON) needs it: each maximal
/// subpart of an ill-formed sequence (utf8_maximal_subpart) becomes one U+FFFD, everything
/// else (ASCII, control characters included, and well-formed sequences) stays as it is. So
/// "a\xF1\x80\x80\xE1\x80\xC2b" becomes "a\uFFFD\uFFFD\uFFFDb": F1 80 80 and E1 80 are
/// sequences cut short, C2 one cut short by the "b" that follows.
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
      i += utf8_maximal_subpart(text.substr(i));
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
