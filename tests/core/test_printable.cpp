#include "../../src/core/printable.hpp"

// detail::valid_utf8 and the UTF-8 rules beneath it (a private header of src/core, shared by
// plan_to_json, the Chrome trace and the SVG timeline).

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace test_printable {  // each test file's names apart (unity builds)

using swp::detail::is_utf8;
using swp::detail::utf8_maximal_subpart;
using swp::detail::utf8_sequence;
using swp::detail::valid_utf8;

const std::string fffd = "\uFFFD";

// How much one U+FFFD stands for at the start of the text (Unicode §3.9, Table 3-8).
static_assert(utf8_maximal_subpart("\xe2\x82x") == 2);         // cut short
static_assert(utf8_maximal_subpart("\xf1\x80\x80\xe1") == 3);  // cut short
static_assert(utf8_maximal_subpart("\xc2") == 1);              // cut short by the end
static_assert(utf8_maximal_subpart("\x80\x80") == 1);          // stray continuation byte
static_assert(utf8_maximal_subpart("\xc0\xaf") == 1);          // never a lead byte
static_assert(utf8_maximal_subpart("\xe0\x80\xaf") == 1);      // overlong
static_assert(utf8_maximal_subpart("\xed\xa0\x80") == 1);      // surrogate
static_assert(utf8_maximal_subpart("\xf4\x90\x80\x80") == 1);  // past U+10FFFF
static_assert(utf8_sequence("\xf4\x8f\xbf\xbf") == 4 && utf8_sequence("\xe2\x82x") == 0);

struct Case {
  std::string what;
  std::string in;
  std::string out;
};

TEST_CASE("valid_utf8 writes one U+FFFD for each maximal subpart of ill-formed UTF-8") {
  const Case cases[] = {
      // The Unicode Standard's own example (Table 3-8): F1 80 80 and E1 80 are cut short by
      // the byte after them, C2 by the "b"; the two stray 80 BF are one each.
      {"Table 3-8", "\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64",
       "a" + fffd + fffd + fffd + "b" + fffd + "c" + fffd + fffd + "d"},
      // Cut short before a byte that cannot follow, and at the end of the text.
      {"2 of 3 before ASCII", "\xe2\x82x", fffd + "x"},
      {"2 of 3 before a lead byte", "\xe2\x82\xe2\x82\xac", fffd + "\xe2\x82\xac"},
      {"3 of 4 before a lead byte", "\xf0\x9f\x9a\xc3\xa9", fffd + "\xc3\xa9"},
      {"1 of 2 at the end", "x\xc2", "x" + fffd},
      {"2 of 3 at the end", "x\xe2\x82", "x" + fffd},
      {"1 of 4 at the end", "x\xf0", "x" + fffd},
      {"2 of 4 at the end", "x\xf0\x9f", "x" + fffd},
      {"3 of 4 at the end", "x\xf0\x9f\x9a", "x" + fffd},
      // Bytes that start no well-formed sequence: one each.
      {"stray continuation bytes", "\x80\xbf", fffd + fffd},
      {"C0 and C1", "\xc0\xaf\xc1\xbf", fffd + fffd + fffd + fffd},
      {"F5..FF", "\xf5\x80\x80\x80\xfe\xff", fffd + fffd + fffd + fffd + fffd + fffd},
      // Surrogates, overlong forms and code points past U+10FFFF: the second byte is out of
      // the range its lead allows, so the lead alone is a maximal subpart and the rest stray.
      {"surrogate D800", "\xed\xa0\x80", fffd + fffd + fffd},
      {"surrogate DFFF", "\xed\xbf\xbf", fffd + fffd + fffd},
      {"overlong 3 bytes", "\xe0\x80\xaf", fffd + fffd + fffd},
      {"overlong 3 bytes, highest", "\xe0\x9f\xbf", fffd + fffd + fffd},
      {"overlong 4 bytes", "\xf0\x80\x80\xaf", fffd + fffd + fffd + fffd},
      {"overlong 4 bytes, highest", "\xf0\x8f\xbf\xbf", fffd + fffd + fffd + fffd},
      {"past U+10FFFF", "\xf4\x90\x80\x80", fffd + fffd + fffd + fffd},
      {"a surrogate cut short", "\xed\xa0", fffd + fffd},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    CHECK(valid_utf8(c.in) == c.out);
    CHECK(is_utf8(valid_utf8(c.in)));
  }
}

TEST_CASE("valid_utf8 keeps well-formed UTF-8 of every length as it is") {
  const std::string valid[] = {
      "",
      std::string("a\0\x1f\x7f", 4),  // ASCII, control characters included
      "\xc2\x80",                     // U+0080, the lowest of two bytes
      "\xdf\xbf",                     // U+07FF
      "\xe0\xa0\x80",                 // U+0800, the lowest of three bytes
      "\xe2\x82\xac",                 // U+20AC
      "\xed\x9f\xbf",                 // U+D7FF, just below the surrogates
      "\xee\x80\x80",                 // U+E000, just above them
      "\xef\xbf\xbf",                 // U+FFFF
      "\xf0\x90\x80\x80",             // U+10000, the lowest of four bytes
      "\xf0\x9f\x9a\x80",             // U+1F680
      "\xf4\x8f\xbf\xbf",             // U+10FFFF, the highest
      "\xe6\x97\xa5\xe6\x9c\xac e\xcc\x81 \xf0\x9f\x9a\x80",
  };
  for (const std::string& text : valid) {
    CAPTURE(text);
    CHECK(is_utf8(text));
    CHECK(valid_utf8(text) == text);
  }
  // Around an ill-formed sequence too.
  CHECK(valid_utf8("\xe2\x82\xac\xe2\x82\xf0\x9f\x9a\x80") ==
        "\xe2\x82\xac" + fffd + "\xf0\x9f\x9a\x80");
}

}  // namespace test_printable
