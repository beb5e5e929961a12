#include "swp/core/plan_json.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <sstream>

#include "concat.hpp"
#include "printable.hpp"

namespace json = boost::json;

namespace swp {

namespace {

std::string format_error(const std::string& source, const std::string& field,
                         const std::string& message, int line, int column) {
  std::string where = source;
  if (line > 0) where += detail::concat(":", line, ":", column);
  return where + ": " + (field.empty() ? "" : field + ": ") + message;
}

std::string kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return v.get_bool() ? "true" : "false";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "number " + json::serialize(v);
    case json::kind::string: return "string " + json::serialize(v);
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "a value";
}

// Reads typed fields out of one JSON object, naming the path of every offending value.
class Reader {
 public:
  Reader(const std::string& source, std::vector<std::string>& warnings)
      : source_(source), warnings_(warnings) {}

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw PlanFormatError(source_, field, message);
  }

  [[noreturn]] void expected(const std::string& field, const std::string& what,
                             const json::value& got) const {
    fail(field, "expected " + what + ", got " + kind_of(got));
  }

  const json::object& object(const json::value& v, const std::string& field) const {
    if (!v.is_object()) expected(field, "an object", v);
    return v.get_object();
  }

  const json::array& array(const json::value& v, const std::string& field) const {
    if (!v.is_array()) expected(field, "an array", v);
    return v.get_array();
  }

  std::string string(const json::value& v, const std::string& field) const {
    if (!v.is_string()) expected(field, "a string", v);
    return std::string(v.get_string());
  }

  std::string non_empty_string(const json::value& v, const std::string& field) const {
    auto text = string(v, field);
    if (text.empty()) fail(field, "expected a non-empty string");
    return text;
  }

  long long integer(const json::value& v, const std::string& field) const {
    if (v.is_int64()) return v.get_int64();
    if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(
                                               std::numeric_limits<long long>::max()))
      return static_cast<long long>(v.get_uint64());
    expected(field, "an integer", v);
  }

  int int32(const json::value& v, const std::string& field) const {
    const long long x = integer(v, field);
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
      fail(field, detail::concat("integer ", x, " is out of range"));
    return static_cast<int>(x);
  }

  // A task, stream, lane or alias name: non-empty, and without control characters, which
  // would reach terminals and line-based outputs (`swp order`) raw. Shown escaped.
  std::string name(const json::value& v, const std::string& field) const {
    auto text = non_empty_string(v, field);
    check_name(text, field);
    return text;
  }
  void check_name(std::string_view text, const std::string& field) const {
    if (detail::has_control_character(text))
      fail(field,
           "a name may not hold control characters (NUL, newline, ESC, C1, U+2028, ...), got \"" +
               detail::printable(text) + "\" (shown escaped)");
  }

  double non_negative(const json::value& v, const std::string& field) const {
    if (!v.is_number()) expected(field, "a number of microseconds", v);
    const double x = v.to_number<double>();
    if (!(x >= 0) || !std::isfinite(x))
      fail(field, "expected a non-negative number of microseconds, got " + json::serialize(v));
    return x;
  }

  bool boolean(const json::value& v, const std::string& field) const {
    if (!v.is_bool()) expected(field, "true or false", v);
    return v.get_bool();
  }

  void warn_unknown(const json::object& obj, const std::string& field,
                    const std::set<std::string_view>& known) const {
    for (const auto& [key, value] : obj) {
      if (known.contains(key)) continue;
      std::string allowed;
      for (auto k : known) allowed += (allowed.empty() ? "" : ", ") + std::string(k);
      warnings_.push_back(source_ + ": " + (field.empty() ? "" : field + ".") + detail::printable(key) +
                          ": unknown key ignored (known keys: " + allowed + ")");
    }
  }

 private:
  const std::string& source_;
  std::vector<std::string>& warnings_;
};

PlannedTask read_task(const Reader& r, const json::value& v, const std::string& field) {
  const auto& obj = r.object(v, field);
  // Built once, not once per task.
  static const std::set<std::string_view> known{
      "name",   "stage",     "stream",       "thread_group",    "globally_ordered",
      "stream_priority", "cpu_us", "device_us", "jitter_every", "jitter_device_us"};
  r.warn_unknown(obj, field, known);
  PlannedTask task;
  const auto* name = obj.if_contains("name");
  if (name == nullptr) r.fail(field, "missing required key \"name\"");
  task.task.name = r.name(*name, field + ".name");
  const std::string at = field + " (" + task.task.name + ")";
  if (const auto* x = obj.if_contains("stage")) task.schedule.stage = r.int32(*x, at + ".stage");
  if (const auto* x = obj.if_contains("stream")) task.schedule.stream = r.name(*x, at + ".stream");
  if (const auto* x = obj.if_contains("thread_group"))
    task.schedule.thread_group = r.name(*x, at + ".thread_group");
  if (const auto* x = obj.if_contains("globally_ordered"))
    task.schedule.globally_ordered = r.boolean(*x, at + ".globally_ordered");
  if (const auto* x = obj.if_contains("stream_priority"))
    task.schedule.stream_priority = r.int32(*x, at + ".stream_priority");
  if (const auto* x = obj.if_contains("cpu_us")) task.cost.cpu_us = r.non_negative(*x, at + ".cpu_us");
  if (const auto* x = obj.if_contains("device_us")) task.cost.device_us = r.non_negative(*x, at + ".device_us");
  if (const auto* x = obj.if_contains("jitter_every")) {
    task.cost.jitter_every = r.int32(*x, at + ".jitter_every");
    if (task.cost.jitter_every < 0) r.fail(at + ".jitter_every", "expected an integer >= 0");
  }
  if (const auto* x = obj.if_contains("jitter_device_us"))
    task.cost.jitter_device_us = r.non_negative(*x, at + ".jitter_device_us");
  return task;
}

std::vector<Dependency> read_deps(const Reader& r, const json::object& root, const char* key) {
  std::vector<Dependency> deps;
  const auto* v = root.if_contains(key);
  if (v == nullptr) return deps;
  const auto& list = r.array(*v, key);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = detail::concat(key, "[", i, "]");
    const auto& pair = r.array(list[i], field);
    if (pair.size() != 2)
      r.fail(field, detail::concat("expected a pair [task, depends_on], got ", pair.size(),
                                   " element(s)"));
    deps.push_back({r.name(pair[0], field + "[0]"), r.name(pair[1], field + "[1]")});
  }
  return deps;
}

// `"stream_aliases": {"alias": "target", ...}`; what the aliases mean is checked by validation.
std::map<std::string, std::string> read_stream_aliases(const Reader& r, const json::object& root) {
  std::map<std::string, std::string> aliases;
  const auto* v = root.if_contains("stream_aliases");
  if (v == nullptr) return aliases;
  for (const auto& [alias, target] : r.object(*v, "stream_aliases")) {
    if (alias.empty()) r.fail("stream_aliases", "an alias name is empty");
    r.check_name(alias, "stream_aliases");
    const std::string field = "stream_aliases." + std::string(alias);
    aliases.emplace(std::string(alias), r.name(target, field));
  }
  return aliases;
}

// Builds the json::value of a document like Boost.JSON's own parser does, except that numbers
// with a fraction or an exponent are read with std::from_chars, which rounds correctly:
// Boost.JSON 1.81 is off by an ulp for about one double in ten (113.17408141314563 read back
// as ...564), so plan_to_json's output did not read back as the plan it was written from.
class PreciseHandler {
 public:
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  json::value_stack stack;

  // A key that the object being read already has (Boost.JSON would keep the last value
  // silently): the parse stops at it with an error, and this names it.
  std::optional<std::string> duplicate_key;
  std::size_t keys_read = 0;  // keys met so far, the duplicate included: it is the last

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    keys_.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t n, json::error_code&) {
    keys_.pop_back();
    return done(&json::value_stack::push_object, n);
  }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t n, json::error_code&) {
    return done(&json::value_stack::push_array, n);
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    key_.append(s.data(), s.size());
    return chars(s);
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    key_.append(s.data(), s.size());
    ++keys_read;
    if (!keys_.back().insert(key_).second) {
      duplicate_key = std::move(key_);
      key_.clear();
      ec = json::error::syntax;  // stops the parse here; parse_plan reports duplicate_key
      return false;
    }
    key_.clear();
    return done(&json::value_stack::push_key, s);
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) { return chars(s); }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    return done(&json::value_stack::push_string, s);
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    number_.clear();
    return done(&json::value_stack::push_int64, i);
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    number_.clear();
    return done(&json::value_stack::push_uint64, u);
  }
  bool on_double(double d, json::string_view s, json::error_code&) {
    number_.append(s.data(), s.size());
    double precise = 0;
    const char* end = number_.data() + number_.size();
    // Out of range (1e400): keep what Boost.JSON made of it.
    if (auto [stop, error] = std::from_chars(number_.data(), end, precise);
        error == std::errc() && stop == end)
      d = precise;
    number_.clear();
    return done(&json::value_stack::push_double, d);
  }
  bool on_bool(bool b, json::error_code&) { return done(&json::value_stack::push_bool, b); }
  bool on_null(json::error_code&) {
    stack.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  template <class Push, class Arg>
  bool done(Push push, Arg arg) {
    (stack.*push)(arg);
    return true;
  }
  bool chars(json::string_view s) { return done(&json::value_stack::push_chars, s); }

  std::string number_;  // the text of the number being read
  std::string key_;     // the key being read
  std::vector<std::set<std::string>> keys_;  // the keys of each object being read, innermost last
};

// `text` as one JSON value, or the error and how far the parser got (as json::stream_parser's
// write and finish report it).
json::value parse_json(std::string_view text, json::error_code& ec, std::size_t& used,
                       std::optional<std::string>& duplicate_key, std::size_t& keys_read) {
  json::basic_parser<PreciseHandler> parser(json::parse_options{});
  parser.handler().stack.reset();
  used = parser.write_some(true, text.data(), text.size(), ec);
  if (!ec && used < text.size()) ec = json::error::extra_data;
  if (ec) {
    duplicate_key = std::move(parser.handler().duplicate_key);
    keys_read = parser.handler().keys_read;
    return {};
  }
  parser.write_some(false, nullptr, 0, ec);
  if (ec) {
    used = text.size();  // the text ended inside a value
    return {};
  }
  return parser.handler().stack.release();
}

// Where the `n`-th key (1-based) of `text` begins: its opening quote; `text` is valid JSON up
// to there (the parser read it). Keys are counted because neither the parser's offset (a key
// with escapes is decoded in a buffer of the parser's, and the offset lands before it) nor the
// key's decoded spelling ("tasks" for "t\\u0061sks") finds the key in the text.
std::size_t key_start(std::string_view text, std::size_t n) {
  std::size_t keys = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    const std::size_t open = i;
    for (++i; i < text.size() && text[i] != '"'; ++i)
      if (text[i] == '\\') ++i;  // an escape: skip the character after the backslash
    std::size_t after = i + 1;
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t' ||
                                   text[after] == '\n' || text[after] == '\r'))
      ++after;
    if (after < text.size() && text[after] == ':' && ++keys == n) return open;
  }
  return text.size();
}

std::pair<int, int> line_and_column(std::string_view text, std::size_t offset) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::string number(double x) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, end);
}

// A JSON string literal of `text`; a name that is no UTF-8 (in a plan validate() refuses, built
// in code) gets one U+FFFD for each maximal subpart of ill-formed UTF-8 (detail::valid_utf8),
// so that what plan_to_json writes is always JSON.
std::string quote(std::string_view text) {
  return json::serialize(json::value(detail::valid_utf8(text)));
}

}  // namespace

PlanFormatError::PlanFormatError(std::string source, std::string field,
                                 const std::string& message, int line, int column)
    : std::runtime_error(format_error(source, field, message, line, column)),
      source_(std::move(source)),
      field_(std::move(field)),
      line_(line),
      column_(column) {}

ParsedPlan parse_plan(std::string_view text, const std::string& source) {
  json::error_code ec;
  std::size_t used = 0;
  std::optional<std::string> duplicate_key;
  std::size_t keys_read = 0;
  const json::value root_value = parse_json(text, ec, used, duplicate_key, keys_read);
  if (ec) {
    // A duplicate key is reported at the key itself.
    const std::size_t at = duplicate_key ? key_start(text, keys_read) : used;
    const auto [line, column] = line_and_column(text, at);
    if (duplicate_key)
      throw PlanFormatError(source, "",
                            "duplicate key " + quote(*duplicate_key) +
                                " (an object may hold each key once; which value was meant?)",
                            line, column);
    throw PlanFormatError(source, "", "malformed JSON: " + ec.message(), line, column);
  }

  ParsedPlan parsed;
  const Reader r(source, parsed.warnings);
  const auto& root = r.object(root_value, "plan");
  r.warn_unknown(root, "",
                 {"tasks", "intra_iter_deps", "inter_iter_deps", "pipeline_depth", "stream_aliases"});
  const auto* tasks = root.if_contains("tasks");
  if (tasks == nullptr) r.fail("plan", "missing required key \"tasks\"");
  const auto& list = r.array(*tasks, "tasks");
  for (std::size_t i = 0; i < list.size(); ++i)
    parsed.plan.tasks.push_back(read_task(r, list[i], detail::concat("tasks[", i, "]")));
  parsed.plan.intra_iter_deps = read_deps(r, root, "intra_iter_deps");
  parsed.plan.inter_iter_deps = read_deps(r, root, "inter_iter_deps");
  if (const auto* d = root.if_contains("pipeline_depth")) {
    parsed.plan.pipeline_depth = r.int32(*d, "pipeline_depth");
    if (*parsed.plan.pipeline_depth < 1) r.fail("pipeline_depth", "expected an integer >= 1");
  }
  parsed.plan.stream_aliases = read_stream_aliases(r, root);
  return parsed;
}

namespace {

struct FreeText {
  void operator()(char* text) const noexcept { std::free(text); }
};

// A plan's text as read: at most max_plan_bytes + 1 bytes (the one more tells a larger input).
struct PlanText {
  std::unique_ptr<char, FreeText> bytes;
  std::size_t size = 0;
  std::size_t capacity = 0;
  [[nodiscard]] std::string_view view() const { return {bytes.get(), size}; }
};

[[noreturn]] void plan_too_large(const std::string& source) {
  throw PlanFormatError(source, "",
                        "more than " + std::to_string(max_plan_bytes >> 20) +
                            " MiB: larger than any plan swp reads (is this a plan file?)");
}

// Makes room for more of `text`, never past the bound: a buffer sized once when the size is
// known (`expected`, a regular file's), else grown by doubling with realloc, which glibc does
// for large blocks by remapping their pages rather than copying them. So reading N bytes takes
// about N bytes at its peak: a std::string doubling past 256 MiB took 512 MiB, plus the copy.
void grow_plan_text(PlanText& text, std::size_t expected, const std::string& source) {
  constexpr std::size_t limit = max_plan_bytes + 1;
  if (text.capacity == limit) plan_too_large(source);
  const std::size_t wanted =
      std::min(limit, std::max({text.capacity * 2, expected + 1, std::size_t{1} << 16}));
  char* grown = static_cast<char*>(std::realloc(text.bytes.get(), wanted));
  if (grown == nullptr) throw std::bad_alloc();
  (void)text.bytes.release();  // realloc took it over
  text.bytes.reset(grown);
  text.capacity = wanted;
}

// All of `in`, up to max_plan_bytes: a stream that goes on (/dev/zero) ends in an error, not
// in memory exhaustion. `expected`: the input's size if known (0: unknown).
PlanText read_bounded(std::istream& in, const std::string& source, std::size_t expected = 0) {
  if (expected > max_plan_bytes) plan_too_large(source);  // refused before reading any of it
  PlanText text;
  do {
    if (text.size == text.capacity) grow_plan_text(text, expected, source);
    in.read(text.bytes.get() + text.size, static_cast<std::streamsize>(text.capacity - text.size));
    text.size += static_cast<std::size_t>(in.gcount());
  } while (in);
  if (in.bad()) throw PlanReadError(source, "", "cannot read plan file: read error");
  return text;
}

// The size of the regular file `path`, or 0 when it is none (a FIFO, /dev/zero).
std::size_t regular_file_size(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return 0;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::size_t>(size);
}

}  // namespace

ParsedPlan load_plan(const std::string& path) {
  if (path == "-") return parse_plan(read_bounded(std::cin, "<stdin>").view(), "<stdin>");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw PlanReadError(path, "", "is a directory, not a plan file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int reason = errno;
    if (!std::filesystem::exists(path, ec))
      throw PlanReadError(path, "", "cannot open plan file: not found");
    throw PlanReadError(path, "",
                        std::string("cannot open plan file: ") +
                            (reason != 0 ? std::strerror(reason) : "open failed"));
  }
  return parse_plan(read_bounded(in, path, regular_file_size(path)).view(), path);
}

std::string plan_to_json(const PipelinePlan& plan) {
  std::string out = "{\n  \"tasks\": [";
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    out += i == 0 ? "\n" : ",\n";
    out += "    {\"name\": " + quote(t.task.name) +
           ", \"stage\": " + std::to_string(t.schedule.stage) +
           ", \"stream\": " + quote(t.schedule.stream) +
           ", \"thread_group\": " + quote(t.schedule.thread_group) +
           ", \"globally_ordered\": " + (t.schedule.globally_ordered ? "true" : "false");
    if (t.schedule.stream_priority)
      out += ", \"stream_priority\": " + std::to_string(*t.schedule.stream_priority);
    if (t.cost.cpu_us != 0) out += ", \"cpu_us\": " + number(t.cost.cpu_us);
    if (t.cost.device_us != 0) out += ", \"device_us\": " + number(t.cost.device_us);
    if (t.cost.jitter_every != 0) out += ", \"jitter_every\": " + std::to_string(t.cost.jitter_every);
    if (t.cost.jitter_device_us != 0)
      out += ", \"jitter_device_us\": " + number(t.cost.jitter_device_us);
    out += "}";
  }
  out += "\n  ]";
  auto deps = [&](const char* key, const std::vector<Dependency>& list) {
    out += ",\n  \"" + std::string(key) + "\": [";
    for (std::size_t i = 0; i < list.size(); ++i) {
      out += i == 0 ? "\n    " : ",\n    ";
      out += '[';
      out += quote(list[i].task.name());
      out += ", ";
      out += quote(list[i].depends_on.name());
      out += ']';
    }
    out += list.empty() ? "]" : "\n  ]";
  };
  deps("intra_iter_deps", plan.intra_iter_deps);
  deps("inter_iter_deps", plan.inter_iter_deps);
  if (plan.pipeline_depth) out += ",\n  \"pipeline_depth\": " + std::to_string(*plan.pipeline_depth);
  if (!plan.stream_aliases.empty()) {
    out += ",\n  \"stream_aliases\": {";
    for (auto it = plan.stream_aliases.begin(); it != plan.stream_aliases.end(); ++it)
      out += (it == plan.stream_aliases.begin() ? "" : ", ") + quote(it->first) + ": " +
             quote(it->second);
    out += "}";
  }
  out += "\n}\n";
  return out;
}

}  // namespace swp
