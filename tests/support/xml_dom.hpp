#pragma once
// A small XML reader for tests: checks that a document is well-formed and gives its element
// tree, so tests can count and inspect what a writer produced (SVG timelines).
//
// Well-formed here means: one root element, properly nested and matching tags, quoted and
// unique attributes, known entity or character references, no stray '<' or '&', and nothing
// but comments, processing instructions and white space around the root. DTDs and CDATA are
// rejected (our writers never produce them).

#include <cctype>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace swp::test {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<XmlElement> children;
  std::string text;  ///< character data directly inside, references resolved

  [[nodiscard]] std::string attr(const std::string& key) const {
    const auto it = attributes.find(key);
    return it == attributes.end() ? std::string() : it->second;
  }
  /// Whether the class attribute lists `token`.
  [[nodiscard]] bool has_class(const std::string& token) const {
    // Appended (" " + std::string: a false -Wrestrict from g++ 12 at -O3, GCC PR 105329).
    std::string classes = " ";
    classes += attr("class");
    classes += ' ';
    std::string padded = " ";
    padded += token;
    padded += ' ';
    return classes.find(padded) != std::string::npos;
  }
  /// Every descendant (not this element) named `element` with class `token` (any if empty).
  [[nodiscard]] std::vector<const XmlElement*> find_all(const std::string& element,
                                                        const std::string& token = "") const {
    std::vector<const XmlElement*> found;
    for (const auto& child : children) {
      if (child.name == element && (token.empty() || child.has_class(token)))
        found.push_back(&child);
      for (const XmlElement* e : child.find_all(element, token)) found.push_back(e);
    }
    return found;
  }
};

/// Thrown for a document that is not well-formed, with the byte offset of the problem.
struct XmlError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class XmlReader {
 public:
  /// The root element of `doc`, or XmlError.
  static XmlElement parse(std::string_view doc) {
    XmlReader r(doc);
    r.misc();
    if (r.at_end() || r.peek() != '<') r.fail("no root element");
    XmlElement root = r.element();
    r.misc();
    if (!r.at_end()) r.fail("content after the root element");
    return root;
  }

 private:
  explicit XmlReader(std::string_view doc) : s_(doc) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw XmlError("XML not well-formed at byte " + std::to_string(pos_) + ": " + what);
  }
  [[nodiscard]] bool at_end() const { return pos_ >= s_.size(); }
  [[nodiscard]] char peek() const { return at_end() ? '\0' : s_[pos_]; }
  [[nodiscard]] bool starts(std::string_view p) const { return s_.substr(pos_, p.size()) == p; }
  void expect(std::string_view p) {
    if (!starts(p)) fail("expected '" + std::string(p) + "'");
    pos_ += p.size();
  }
  void space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) ++pos_;
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' ||
           c == '.' || static_cast<unsigned char>(c) >= 0x80;
  }
  std::string name() {
    const std::size_t start = pos_;
    if (at_end() || !(std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_' ||
                      peek() == ':'))
      fail("expected a name");
    while (!at_end() && name_char(peek())) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  // Skips `until`, failing when the input ends first.
  void skip_past(std::string_view until) {
    const auto end = s_.find(until, pos_);
    if (end == std::string_view::npos) fail("unterminated construct, missing '" + std::string(until) + "'");
    pos_ = end + until.size();
  }
  // Skips a comment or processing instruction (the XML declaration too) if one starts here.
  bool skip_markup() {
    if (starts("<!--")) {
      skip_past("-->");
    } else if (starts("<?")) {
      skip_past("?>");
    } else if (starts("<!")) {
      fail("DTDs and CDATA are not supported");
    } else {
      return false;
    }
    return true;
  }
  // Comments, processing instructions and white space.
  void misc() {
    do {
      space();
    } while (skip_markup());
  }
  static void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | c >> 6);
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | c >> 12);
      out += static_cast<char>(0x80 | (c >> 6 & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | c >> 18);
      out += static_cast<char>(0x80 | (c >> 12 & 0x3f));
      out += static_cast<char>(0x80 | (c >> 6 & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  // A reference after '&', appended to `out`.
  void reference(std::string& out) {
    expect("&");
    const auto end = s_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 10) fail("unterminated reference");
    const std::string ref(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    static const std::map<std::string, std::string> named = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
    if (const auto it = named.find(ref); it != named.end()) {
      out += it->second;
    } else if (ref.size() > 1 && ref[0] == '#') {
      // A character reference, resolved: writers escape tab and newline in attributes so,
      // and tests compare the values.
      const bool hex = ref[1] == 'x';
      char32_t code = 0;
      for (std::size_t k = hex ? 2 : 1; k < ref.size(); ++k) {
        const auto digit = static_cast<unsigned char>(ref[k]);
        if (!(hex ? std::isxdigit(digit) : std::isdigit(digit)))
          fail("bad character reference '&" + ref + ";'");
        const int value = std::isdigit(digit) ? digit - '0' : std::tolower(digit) - 'a' + 10;
        code = code * (hex ? 16 : 10) + static_cast<char32_t>(value);
        if (code > 0x10ffff) fail("character reference '&" + ref + ";' past U+10FFFF");
      }
      // XML 1.0's Char production: no NUL, C0 control but tab, newline, return, surrogate,
      // U+FFFE or U+FFFF, even as a reference.
      if ((code < 0x20 && code != 0x9 && code != 0xa && code != 0xd) ||
          (code >= 0xd800 && code <= 0xdfff) || code == 0xfffe || code == 0xffff ||
          ref.size() == (hex ? 2U : 1U))
        fail("character reference '&" + ref + ";' to no XML character");
      append_utf8(out, code);
    } else {
      fail("unknown entity '&" + ref + ";'");
    }
  }
  std::string attribute_value() {
    const char quote = peek();
    if (quote != '"' && quote != '\'') fail("attribute value not quoted");
    ++pos_;
    std::string value;
    while (peek() != quote) {
      if (at_end()) fail("unterminated attribute value");
      if (peek() == '<') fail("'<' in an attribute value");
      if (peek() == '&') {
        reference(value);
      } else {
        value += s_[pos_++];
      }
    }
    ++pos_;
    return value;
  }
  XmlElement element() {
    expect("<");
    XmlElement e;
    e.name = name();
    for (;;) {
      const std::size_t before = pos_;
      space();
      if (starts("/>")) {
        pos_ += 2;
        return e;
      }
      if (starts(">")) {
        ++pos_;
        break;
      }
      if (pos_ == before) fail("expected white space before an attribute");
      std::string key = name();
      space();
      expect("=");
      space();
      if (!e.attributes.emplace(key, attribute_value()).second)
        fail("attribute '" + key + "' repeated on <" + e.name + ">");
    }
    for (;;) {
      if (at_end()) fail("<" + e.name + "> is not closed");
      if (starts("</")) {
        pos_ += 2;
        const std::string closing = name();
        if (closing != e.name) fail("</" + closing + "> closes <" + e.name + ">");
        space();
        expect(">");
        return e;
      }
      if (skip_markup()) {
        continue;
      } else if (peek() == '<') {
        e.children.push_back(element());
      } else if (peek() == '&') {
        reference(e.text);
      } else {
        e.text += s_[pos_++];
      }
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace swp::test
