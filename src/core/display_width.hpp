#pragma once
// How many terminal columns a name takes, for the tables swp prints (schedule_table.cpp):
// a character is not a column when it is wide (CJK: two) or a combining mark (none).

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <string_view>

namespace swp::detail {

/// A closed range of code points.
struct CodePointRange {
  char32_t first;
  char32_t last;
};

/// Code points that take no column: combining marks, which draw on the character before them
/// (general category Mn/Me), and invisible format characters (Cf). The combining blocks in
/// full and the marks of the scripts met most in names; a mark of another script (an Indic
/// vowel sign, say) counts one column, as in many terminals. Sorted, disjoint.
inline constexpr std::array<CodePointRange, 32> zero_width_ranges{{
    {0x0300, 0x036F},    // Combining Diacritical Marks
    {0x0483, 0x0489},    // Cyrillic combining titlo and signs
    {0x0591, 0x05BD},    // Hebrew points and accents
    {0x05BF, 0x05BF},    //
    {0x05C1, 0x05C2},    //
    {0x05C4, 0x05C5},    //
    {0x05C7, 0x05C7},    //
    {0x0610, 0x061A},    // Arabic marks
    {0x064B, 0x065F},    //
    {0x0670, 0x0670},    //
    {0x06D6, 0x06DC},    //
    {0x06DF, 0x06E4},    //
    {0x06E7, 0x06E8},    //
    {0x06EA, 0x06ED},    //
    {0x0E31, 0x0E31},    // Thai vowel and tone marks
    {0x0E34, 0x0E3A},    //
    {0x0E47, 0x0E4E},    //
    {0x1160, 0x11FF},    // Hangul Jamo medial vowels and finals (join the initial before them)
    {0x1AB0, 0x1AFF},    // Combining Diacritical Marks Extended
    {0x1DC0, 0x1DFF},    // Combining Diacritical Marks Supplement
    {0x200B, 0x200F},    // zero width space, non-joiner, joiner; LRM, RLM
    {0x202A, 0x202E},    // bidirectional embeddings and overrides
    {0x2060, 0x2064},    // word joiner, invisible operators
    {0x20D0, 0x20FF},    // Combining Diacritical Marks for Symbols
    {0x302A, 0x302D},    // ideographic tone marks
    {0x3099, 0x309A},    // combining kana voiced sound marks
    {0xFE00, 0xFE0F},    // Variation Selectors
    {0xFE20, 0xFE2F},    // Combining Half Marks
    {0xFEFF, 0xFEFF},    // zero width no-break space (BOM)
    {0xE0001, 0xE0001},  // language tag
    {0xE0020, 0xE007F},  // tag characters
    {0xE0100, 0xE01EF},  // Variation Selectors Supplement
}};

/// Code points of East_Asian_Width W (wide) or F (fullwidth) in Unicode's EastAsianWidth.txt
/// (UAX #11), by block, as Markus Kuhn's wcwidth groups them, with the emoji blocks that are
/// W since Unicode 9 (and 12: Symbols and Pictographs Extended-A). Emoji standing alone in
/// older symbol blocks (U+231A watch, U+26A1 high voltage, U+2705 check mark, ...) are left
/// out and count one column. Sorted, disjoint; checked after zero_width_ranges
/// (U+302A..U+302D).
inline constexpr std::array<CodePointRange, 23> wide_ranges{{
    {0x1100, 0x115F},    // Hangul Jamo initial consonants
    {0x2329, 0x232A},    // angle brackets
    {0x2E80, 0x303E},    // CJK Radicals, Kangxi Radicals, CJK Symbols and Punctuation
    {0x3041, 0x33FF},    // Hiragana, Katakana, Bopomofo, ..., CJK Compatibility
    {0x3400, 0x4DBF},    // CJK Unified Ideographs Extension A
    {0x4E00, 0x9FFF},    // CJK Unified Ideographs
    {0xA000, 0xA4CF},    // Yi Syllables, Yi Radicals
    {0xA960, 0xA97F},    // Hangul Jamo Extended-A
    {0xAC00, 0xD7A3},    // Hangul Syllables
    {0xF900, 0xFAFF},    // CJK Compatibility Ideographs
    {0xFE10, 0xFE19},    // Vertical Forms
    {0xFE30, 0xFE6F},    // CJK Compatibility Forms, Small Form Variants
    {0xFF00, 0xFF60},    // Fullwidth Forms (ASCII variants)
    {0xFFE0, 0xFFE6},    // Fullwidth signs
    {0x16FE0, 0x18CFF},  // Ideographic Symbols, Tangut, Khitan
    {0x1B000, 0x1B2FF},  // Kana Supplement and Extended, Nushu
    {0x1F200, 0x1F2FF},  // Enclosed Ideographic Supplement
    {0x1F300, 0x1F64F},  // Miscellaneous Symbols and Pictographs, Emoticons
    {0x1F680, 0x1F6FF},  // Transport and Map Symbols
    {0x1F900, 0x1F9FF},  // Supplemental Symbols and Pictographs
    {0x1FA70, 0x1FAFF},  // Symbols and Pictographs Extended-A
    {0x20000, 0x2FFFD},  // CJK Unified Ideographs Extensions B..F, Compatibility Supplement
    {0x30000, 0x3FFFD},  // CJK Unified Ideographs Extension G and later
}};

/// Whether `ranges` are sorted and disjoint, as in_ranges needs.
template <std::size_t N>
[[nodiscard]] constexpr bool sorted_disjoint(const std::array<CodePointRange, N>& ranges) noexcept {
  for (std::size_t i = 0; i < N; ++i)
    if (ranges[i].first > ranges[i].last || (i > 0 && ranges[i - 1].last >= ranges[i].first))
      return false;
  return true;
}
static_assert(sorted_disjoint(zero_width_ranges) && sorted_disjoint(wide_ranges));

/// Whether `c` lies in one of `ranges` (sorted, disjoint): a binary search.
template <std::size_t N>
[[nodiscard]] constexpr bool in_ranges(char32_t c,
                                       const std::array<CodePointRange, N>& ranges) noexcept {
  const auto* it =
      std::upper_bound(ranges.begin(), ranges.end(), c,
                       [](char32_t v, const CodePointRange& r) { return v < r.first; });
  return it != ranges.begin() && c <= std::prev(it)->last;
}

/// The columns one code point takes: 0 (combining, zero width), 2 (wide, fullwidth) or 1.
[[nodiscard]] constexpr std::size_t code_point_width(char32_t c) noexcept {
  if (c < 0x300) return 1;  // ASCII and Latin-1: the common case, no search
  if (in_ranges(c, zero_width_ranges)) return 0;
  return in_ranges(c, wide_ranges) ? 2 : 1;
}

/// The columns `text` (UTF-8) takes on a terminal: the sum of code_point_width over its code
/// points. A byte that starts no well-formed sequence (a stray continuation byte, a sequence
/// cut short) counts one column, so malformed text still pads to something.
[[nodiscard]] constexpr std::size_t display_width(std::string_view text) noexcept {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = lead < 0x80    ? 1
                               : lead >= 0xF0 ? 4
                               : lead >= 0xE0 ? 3
                               : lead >= 0xC0 ? 2
                                              : 0;
    char32_t c = length == 4 ? lead & 0x07u : length == 3 ? lead & 0x0Fu : lead & 0x1Fu;
    bool well_formed = length != 0 && i + length <= text.size();
    for (std::size_t k = 1; well_formed && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      well_formed = (next & 0xC0) == 0x80;
      c = (c << 6) | (next & 0x3Fu);
    }
    if (!well_formed) {
      ++width;
      ++i;
      continue;
    }
    width += length == 1 ? 1 : code_point_width(c);
    i += length;
  }
  return width;
}

}  // namespace swp::detail
