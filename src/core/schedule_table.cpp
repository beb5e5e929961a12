#include "swp/core/schedule_table.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "display_width.hpp"
#include "swp/core/enqueue_order.hpp"

namespace swp {

namespace {

// The columns `text` takes on a terminal, not its bytes or code points: "Größe" pads as five
// columns, "数据" as four (wide), "Cafe" with a combining acute accent as four.
std::size_t columns(const std::string& text) { return detail::display_width(text); }
static_assert(detail::display_width("Größe") == 5 && detail::display_width("数据") == 4 &&
              detail::display_width("Cafe\u0301") == 4 && detail::display_width("ｇｐｕ") == 6 &&
              detail::display_width("a\u200Db") == 2 && detail::display_width("\xff") == 1);

std::string left(const std::string& text, std::size_t width) {
  const std::size_t used = columns(text);
  return text + std::string(width > used ? width - used : 0, ' ');
}

std::string right(const std::string& text, std::size_t width) {
  const std::size_t used = columns(text);
  return std::string(width > used ? width - used : 0, ' ') + text;
}

// Centred as Python's str.center does for these short marks: the odd space goes right.
std::string centre(const std::string& text, std::size_t width) {
  if (width <= text.size()) return text;
  const std::size_t pad = width - text.size();
  return std::string(pad / 2, ' ') + text + std::string(pad - pad / 2, ' ');
}

// A mark and a number, e.g. "P3" (appended: "P" + std::to_string draws a false -Wrestrict from
// g++ 12 at -O3, GCC PR 105329).
std::string numbered(char mark, std::int64_t n) {
  std::string out(1, mark);
  out += std::to_string(n);
  return out;
}

void trim_right(std::string& line) {
  line.erase(line.find_last_not_of(' ') + 1);
}

}  // namespace

std::string format_schedule(const PlanGraph& graph, int periods,
                            const std::set<std::string>& shortcut) {
  if (periods < 1) throw std::invalid_argument("format_schedule: periods must be at least 1");
  const auto rows = enqueue_order(graph, OrderPolicy::stage_descending);

  std::vector<std::string> labels;
  for (TaskIndex t : rows) labels.push_back(graph.name(t) + (shortcut.contains(graph.name(t)) ? " [skip]" : ""));

  std::size_t w_index =
      rows.empty() ? 2 : std::max<std::size_t>(2, std::to_string(rows.size() - 1).size());
  // Minimum widths are those of the seeds' tables, which wider names widen.
  std::size_t w_task = 17, w_lane = 7, w_stream = 12;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    w_task = std::max(w_task, columns(labels[r]));
    w_lane = std::max(w_lane, columns(graph.lane(rows[r])));
    w_stream = std::max(w_stream, columns(graph.stream_label(rows[r])));
  }
  const std::size_t w_cell = std::max<std::size_t>(5, std::to_string(periods - 1).size() + 2);

  std::string out;
  auto emit = [&](std::string line) {
    trim_right(line);
    out += line + '\n';
  };

  std::string header = "  " + right("#", w_index) + "  " + left("Task", w_task) + "  " +
                       left("Thread", w_lane) + "  " + left("Stream", w_stream) + "  |";
  std::string rule = "  " + std::string(w_index, '-') + "  " + std::string(w_task, '-') + "  " +
                     std::string(w_lane, '-') + "  " + std::string(w_stream, '-') + "  +";
  for (int p = 0; p < periods; ++p) {
    header += ' ';
    header += left(numbered('P', p), w_cell);
    rule += ' ';
    rule.append(w_cell, '-');
  }
  emit(header);
  emit(rule);

  for (std::size_t r = 0; r < rows.size(); ++r) {
    const TaskIndex t = rows[r];
    const bool skipped = shortcut.contains(graph.name(t));
    std::string line = "  " + right(std::to_string(r), w_index) + "  " + left(labels[r], w_task) +
                       "  " + left(graph.lane(t), w_lane) + "  " + left(graph.stream_label(t), w_stream) +
                       "  |";
    for (int p = 0; p < periods; ++p) {
      // 64 bits: a graph from inspect() may hold any int stage (validation bounds them).
      const std::int64_t iter = std::int64_t{p} - graph.stage(t);
      line += ' ';
      if (iter < 0) {
        line += centre("--", w_cell);
      } else if (skipped) {
        line += centre(".", w_cell);
      } else {
        line += left(numbered('i', iter), w_cell);
      }
    }
    emit(line);
  }
  return out;
}

}  // namespace swp
