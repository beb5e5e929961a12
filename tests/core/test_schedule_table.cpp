#include "swp/core/schedule_table.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/plans.hpp"
#include "swp/core/plan_json.hpp"

namespace test_schedule_table {  // each test file's names apart (unity builds)

using swp::test::make_plan;

using swp::test::lines_of;

namespace {

// Number of `P<k>` columns in a table's header line.
int period_columns(const std::string& table) {
  std::istringstream header(lines_of(table).at(0));
  int count = 0;
  for (std::string word; header >> word;)
    if (word.size() > 1 && word[0] == 'P' &&
        word.find_first_not_of("0123456789", 1) == std::string::npos)
      ++count;
  return count;
}

// Every line has its '|' (or '+' on the rule) in the same column.
void check_aligned(const std::string& table) {
  const auto lines = lines_of(table);
  REQUIRE(lines.size() >= 2);
  const auto bar = lines[0].find('|');
  REQUIRE(bar != std::string::npos);
  CHECK(lines[1].find('+') == bar);
  for (std::size_t i = 2; i < lines.size(); ++i) {
    CAPTURE(lines[i]);
    CHECK(lines[i].find('|') == bar);
  }
}

}  // namespace

TEST_CASE("every seed plan prints the seed's schedule table byte for byte") {
  for (const auto& name : swp::test::seed_plan_names()) {
    CAPTURE(name);
    const auto expected = swp::test::read_text(swp::test::seed_table_path(name));
    const int periods = period_columns(expected);
    REQUIRE(periods >= 5);
    const auto graph = swp::validate(swp::load_plan(swp::test::seed_plan_path(name).string()).plan);
    const auto table = swp::format_schedule(graph, periods);
    CHECK(table == expected);
    check_aligned(table);
  }
}

TEST_CASE("the Stream column shows the plan's stream name, not the alias target") {
  // FusedSparseDist under TorchRec's default: EmbLookup runs on data_dist, the seed's table
  // shows emb_lookup.
  auto plan = swp::load_plan(swp::test::seed_plan_path("fused_sparse_dist").string()).plan;
  plan.stream_aliases = {{"emb_lookup", "data_dist"}};
  CHECK(swp::format_schedule(swp::validate(plan), 5) ==
        swp::test::read_text(swp::test::seed_table_path("fused_sparse_dist")));
}

TEST_CASE("a table has a header, a rule and one row per task in stage-descending order") {
  const auto graph = swp::validate(
      make_plan({{"Load", 0, "memcpy"}, {"Compute", 1}}, {{"Compute", "Load"}}));
  CHECK(swp::format_schedule(graph, 3) ==
        "   #  Task               Thread   Stream        | P0    P1    P2\n"
        "  --  -----------------  -------  ------------  + ----- ----- -----\n"
        "   0  Compute            default  default       |  --   i0    i1\n"
        "   1  Load               default  memcpy        | i0    i1    i2\n");
  CHECK(swp::format_schedule(graph, 1) ==
        "   #  Task               Thread   Stream        | P0\n"
        "  --  -----------------  -------  ------------  + -----\n"
        "   0  Compute            default  default       |  --\n"
        "   1  Load               default  memcpy        | i0\n");
}

TEST_CASE("a cell names the iteration period - stage, from the task's first period on") {
  const auto graph = swp::validate(make_plan({{"S0", 0}, {"S3", 3}}));
  const auto lines = lines_of(swp::format_schedule(graph, 12));
  REQUIRE(lines.size() == 4);
  CHECK(lines[2].ends_with("|  --    --    --   i0    i1    i2    i3    i4    i5    i6    i7    i8"));
  CHECK(lines[3].ends_with("| i0    i1    i2    i3    i4    i5    i6    i7    i8    i9    i10   i11"));
  CHECK(lines[0].ends_with("P9    P10   P11"));
}

TEST_CASE("shortcut tasks are marked [skip] with a dot for every instance they skip") {
  const auto graph = swp::validate(
      make_plan({{"Load", 0, "memcpy"}, {"Compute", 1}, {"Other", 1}}, {{"Compute", "Load"}}));

  SUBCASE("a stage-0 task skips from the first period") {
    CHECK(swp::format_schedule(graph, 3, {"Load"}) ==
          "   #  Task               Thread   Stream        | P0    P1    P2\n"
          "  --  -----------------  -------  ------------  + ----- ----- -----\n"
          "   0  Compute            default  default       |  --   i0    i1\n"
          "   1  Other              default  default       |  --   i0    i1\n"
          "   2  Load [skip]        default  memcpy        |   .     .     .\n");
  }
  SUBCASE("a later-stage task shows -- before its first period, then dots") {
    const auto lines = lines_of(swp::format_schedule(graph, 3, {"Compute", "Other"}));
    REQUIRE(lines.size() == 5);
    CHECK(lines[2] == "   0  Compute [skip]     default  default       |  --     .     .");
    CHECK(lines[3] == "   1  Other [skip]       default  default       |  --     .     .");
    CHECK(lines[4] == "   2  Load               default  memcpy        | i0    i1    i2");
  }
  SUBCASE("names that are not tasks change nothing") {
    CHECK(swp::format_schedule(graph, 3, {"Nobody"}) == swp::format_schedule(graph, 3));
  }
}

TEST_CASE("fewer than one period is an invalid argument") {
  const auto graph = swp::validate(make_plan({{"A"}}));
  CHECK_THROWS_AS((void)swp::format_schedule(graph, 0), std::invalid_argument);
  CHECK_THROWS_AS((void)swp::format_schedule(graph, -3), std::invalid_argument);
  CHECK_NOTHROW((void)swp::format_schedule(graph, 1));
}

TEST_CASE("long names, lanes and streams widen their columns") {
  const std::string long_name = "AVeryLongTaskName_42";  // 20 characters, the minimum is 17
  REQUIRE(long_name.size() == 20);

  SUBCASE("a long task name") {
    const auto graph = swp::validate(make_plan({{long_name, 0}, {"B", 1}}));
    const auto table = swp::format_schedule(graph, 2);
    const auto lines = lines_of(table);
    CHECK(lines[0] == "   #  Task                  Thread   Stream        | P0    P1");
    CHECK(lines[1] == "  --  --------------------  -------  ------------  + ----- -----");
    CHECK(lines[3] == "   1  " + long_name + "  default  default       | i0    i1");
    check_aligned(table);
  }
  SUBCASE("a [skip] suffix that no longer fits") {
    const std::string name17 = "SeventeenCharName";
    REQUIRE(name17.size() == 17);
    const auto graph = swp::validate(make_plan({{name17}}));
    const auto lines = lines_of(swp::format_schedule(graph, 1, {name17}));
    CHECK(lines[1] == "  --  ------------------------  -------  ------------  + -----");
    CHECK(lines[2] == "   0  SeventeenCharName [skip]  default  default       |   .");
  }
  SUBCASE("a long lane and a long stream") {
    auto plan = make_plan({{"A", 0, "a_very_long_stream", "compute_lane"}});
    const auto lines = lines_of(swp::format_schedule(swp::validate(plan), 1));
    CHECK(lines[0] == "   #  Task               Thread        Stream              | P0");
    CHECK(lines[2] == "   0  A                  compute_lane  a_very_long_stream  | i0");
  }
}

TEST_CASE("the table stays aligned with names that are not ASCII, padded by characters") {
  // Widths counted bytes: "Größe" (7 bytes, 5 characters) pushed its row's '|' two columns left.
  const auto plan =
      swp::parse_plan(R"({"tasks":[{"name":"Größe","stream":"ström"},{"name":"Plain","stage":1}]})")
          .plan;
  const auto lines = lines_of(swp::format_schedule(swp::validate(plan), 3));
  REQUIRE(lines.size() == 4);
  const auto bar_column = [](const std::string& line) {  // in characters, not bytes
    std::size_t column = 0;
    for (char c : line.substr(0, line.find_first_of("|+")))
      column += (static_cast<unsigned char>(c) & 0xc0) != 0x80 ? 1 : 0;
    return column;
  };
  for (const auto& line : lines) {
    CAPTURE(line);
    CHECK(bar_column(line) == bar_column(lines[0]));
  }
}

TEST_CASE("the table pads by display width: CJK and fullwidth take two columns, accents none") {
  // Padded by code points, "数据加载" (4 code points, 8 columns) pushed its row's columns four
  // columns right, and "Cafe" + U+0301 (5 code points, 4 columns) pulled them one left.
  const std::string cjk = "数据加载", accented = "Cafe\u0301", fullwidth_lane = "ｇｐｕ";
  const auto plan =
      swp::parse_plan(R"({"tasks":[{"name":"数据加载","stream":"流","thread_group":"ｇｐｕ"},
                                    {"name":"Cafe\u0301"},{"name":"Plain","stream":"s"}]})")
          .plan;
  const auto lines = lines_of(swp::format_schedule(swp::validate(plan), 2));
  REQUIRE(lines.size() == 5);

  // The display width of the characters this test uses (Latin and ASCII 1, U+0301 0, CJK and
  // fullwidth 2), independent of the library's tables.
  const auto width = [](const std::string& text) {
    std::size_t columns = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto lead = static_cast<unsigned char>(text[i]);
      if ((lead & 0xc0) == 0x80) continue;  // continuation byte
      if (lead < 0x80 || (lead & 0xe0) == 0xc0)
        columns += text.compare(i, 2, "\u0301") == 0 ? 0 : 1;
      else
        columns += 2;  // three-byte sequences here: CJK ideographs and fullwidth forms
    }
    return columns;
  };
  // The display columns where each word after the first (the index) starts.
  const auto starts = [&](const std::string& line) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] != ' ' && (i == 0 || line[i - 1] == ' ')) out.push_back(width(line.substr(0, i)));
    out.erase(out.begin());
    return out;
  };
  const auto header = starts(lines[0]);
  REQUIRE(header.size() == 6);  // Task, Thread, Stream, |, P0, P1
  CHECK(header == std::vector<std::size_t>{6, 25, 34, 48, 50, 56});
  for (const auto& line : lines) {
    CAPTURE(line);
    CHECK(starts(line) == header);
  }
  const auto row = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find(cjk) != std::string::npos;
  });
  REQUIRE(row != lines.end());
  CHECK(*row == "   " + std::string(1, row->at(3)) + "  " + cjk + std::string(9, ' ') + "  " +
                    fullwidth_lane + " " + "  流" + std::string(10, ' ') + "  | i0    i1");
  CHECK(std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.find(accented + "  ") != std::string::npos;
  }));
}

}  // namespace test_schedule_table
