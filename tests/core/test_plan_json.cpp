#include "swp/core/plan_json.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/plans.hpp"
#include "support/seed.hpp"
#include "support/text.hpp"

namespace test_plan_json {  // each test file's names apart (unity builds)

using swp::test::contains;
using swp::test::TempFile;

namespace {

// Compares two plans field by field (task bodies and DeclaredIO aside); dependencies by name.
void check_same_plan(const swp::PipelinePlan& got, const swp::PipelinePlan& want) {
  REQUIRE(got.tasks.size() == want.tasks.size());
  for (std::size_t i = 0; i < want.tasks.size(); ++i) {
    CAPTURE(i);
    CHECK(got.tasks[i].task.name == want.tasks[i].task.name);
    CHECK(got.tasks[i].schedule == want.tasks[i].schedule);
    CHECK(got.tasks[i].cost == want.tasks[i].cost);
  }
  auto names = [](const std::vector<swp::Dependency>& deps) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& d : deps) out.emplace_back(d.task.name(), d.depends_on.name());
    return out;
  };
  CHECK(names(got.intra_iter_deps) == names(want.intra_iter_deps));
  CHECK(names(got.inter_iter_deps) == names(want.inter_iter_deps));
  CHECK(got.pipeline_depth == want.pipeline_depth);
  CHECK(got.stream_aliases == want.stream_aliases);
}

// Parses `json`, which must be rejected; returns the error.
swp::PlanFormatError format_error(const std::string& json, const std::string& source = "plan.json") {
  try {
    (void)swp::parse_plan(json, source);
  } catch (const swp::PlanFormatError& e) {
    return e;
  }
  FAIL("parse_plan accepted: ", json);
  throw std::logic_error("unreachable");
}

// A one-task plan whose task has `extra` fields after its name.
std::string one_task(const std::string& extra) {
  return R"({"tasks": [{"name": "H2D")" + extra + "}]}";
}

}  // namespace

TEST_CASE("a minimal plan needs only task names; everything else has its default") {
  const auto parsed = swp::parse_plan(R"({"tasks": [{"name": "A"}, {"name": "B"}]})");
  CHECK(parsed.warnings.empty());
  REQUIRE(parsed.plan.tasks.size() == 2);
  CHECK(parsed.plan.tasks[1].task.name == "B");
  CHECK(parsed.plan.tasks[1].schedule == swp::TaskSchedule{});
  CHECK(parsed.plan.tasks[1].cost == swp::SyntheticCost{});
  CHECK(parsed.plan.intra_iter_deps.empty());
  CHECK(parsed.plan.inter_iter_deps.empty());
  CHECK_FALSE(parsed.plan.pipeline_depth);
  CHECK(parsed.plan.stream_aliases.empty());
}

TEST_CASE("every field of the schema is read") {
  const auto parsed = swp::parse_plan(R"({
    "tasks": [
      {"name": "H2D", "stage": 0, "stream": "memcpy", "thread_group": "io",
       "globally_ordered": true, "cpu_us": 20, "device_us": 300.5,
       "jitter_every": 4, "jitter_device_us": 1200}
    ],
    "intra_iter_deps": [["H2D", "H2D"]],
    "inter_iter_deps": [["H2D", "Other"]],
    "pipeline_depth": 1,
    "stream_aliases": {"emb_lookup": "memcpy", "spare": "default"}
  })");
  const auto& t = parsed.plan.tasks.at(0);
  CHECK(t.schedule == swp::TaskSchedule{.stage = 0, .stream = "memcpy", .thread_group = "io",
                                        .globally_ordered = true});
  CHECK(t.cost == swp::SyntheticCost{.cpu_us = 20, .device_us = 300.5, .jitter_every = 4,
                                     .jitter_device_us = 1200});
  CHECK(parsed.plan.intra_iter_deps == std::vector<swp::Dependency>{{"H2D", "H2D"}});
  CHECK(parsed.plan.inter_iter_deps == std::vector<swp::Dependency>{{"H2D", "Other"}});
  CHECK(parsed.plan.pipeline_depth == 1);
  CHECK(parsed.plan.stream_aliases ==
        std::map<std::string, std::string>{{"emb_lookup", "memcpy"}, {"spare", "default"}});
  CHECK(parsed.warnings.empty());
}

TEST_CASE("plan_to_json round-trips a plan field by field") {
  swp::PipelinePlan plan;
  SUBCASE("the SparseDist plan") { plan = swp::test::sparse_dist_plan(); }
  SUBCASE("costs, lanes, an inferred depth and awkward names") {
    // Quotes, backslashes, non-ASCII; control characters are rejected (see below).
    auto a = plan.add({"say \"hi\"\\ /"}, {.stage = 0, .stream = "s\"1"},
                      {.cpu_us = 0.1, .device_us = 1e-7, .jitter_every = 3,
                       .jitter_device_us = 123456.789});
    auto b = plan.add({"Vorwärts → 前向 🚀"}, {.stage = 2, .thread_group = "lane/ü",
                                              .globally_ordered = true},
                      {.cpu_us = 1.0 / 3.0, .device_us = 2.5e12});
    plan.add({"z"}, {.stage = 1}, {.jitter_every = 1, .jitter_device_us = 0.30000000000000004});
    plan.intra_iter_deps = {{b, a}, {b, a}};
    plan.inter_iter_deps = {{a, b}, {"z", "z"}};
  }
  SUBCASE("a declared depth and no dependencies") {
    plan.add({"only"}, {.stage = 3});
    plan.pipeline_depth = 4;
  }
  SUBCASE("stream priorities") {
    plan = swp::test::sparse_dist_plan();
    plan.tasks[0].schedule.stream_priority = -1;
    plan.tasks[1].schedule.stream_priority = 0;
  }
  SUBCASE("stream aliases, awkward names included") {
    plan = swp::test::sparse_dist_plan();
    plan.tasks[0].schedule.stream = "emb \"lookup\"";
    plan.stream_aliases = {{"emb \"lookup\"", "data_dist"}, {"x", "默认"}};
  }
  const auto json = swp::plan_to_json(plan);
  CAPTURE(json);
  const auto parsed = swp::parse_plan(json);
  CHECK(parsed.warnings.empty());
  check_same_plan(parsed.plan, plan);
  CHECK(swp::plan_to_json(parsed.plan) == json);
}

TEST_CASE("every cost reads back bit for bit from what plan_to_json wrote") {
  // Found by the plan fuzzer: Boost.JSON's own number parser is off by an ulp for about one
  // double in ten (113.17408141314563 read back as 113.17408141314564).
  std::mt19937_64 rng(swp::test::seed(7));
  std::uniform_real_distribution<double> small(0, 1000), large(0, 1e9);
  for (int round = 0; round < 2000; ++round) {
    swp::PipelinePlan plan;
    plan.add({"A"}, {}, {.cpu_us = small(rng), .device_us = large(rng), .jitter_every = 2,
                         .jitter_device_us = round == 0 ? 113.17408141314563 : small(rng)});
    const auto parsed = swp::parse_plan(swp::plan_to_json(plan)).plan;
    REQUIRE(parsed.tasks.size() == 1);
    CAPTURE(swp::plan_to_json(plan));
    CHECK(parsed.tasks[0].cost == plan.tasks[0].cost);
  }
  SUBCASE("a number a double cannot hold is an error naming the field") {
    CHECK_THROWS_WITH_AS(swp::parse_plan(R"({"tasks": [{"name": "A", "cpu_us": 1e400}]})"),
                         doctest::Contains("tasks[0] (A).cpu_us"), swp::PlanFormatError);
  }
}

TEST_CASE("plan_to_json writes one task per line and leaves zero costs out") {
  swp::PipelinePlan plan;
  plan.add({"A"}, {.stage = 1}, {.device_us = 5});
  plan.add({"B"});
  plan.intra_iter_deps = {{"B", "A"}};
  CHECK(swp::plan_to_json(plan) ==
        "{\n"
        "  \"tasks\": [\n"
        "    {\"name\": \"A\", \"stage\": 1, \"stream\": \"default\", \"thread_group\": "
        "\"default\", \"globally_ordered\": false, \"device_us\": 5},\n"
        "    {\"name\": \"B\", \"stage\": 0, \"stream\": \"default\", \"thread_group\": "
        "\"default\", \"globally_ordered\": false}\n"
        "  ],\n"
        "  \"intra_iter_deps\": [\n"
        "    [\"B\", \"A\"]\n"
        "  ],\n"
        "  \"inter_iter_deps\": []\n"
        "}\n");
}

TEST_CASE("plan_to_json writes stream aliases last, on one line, only when there are any") {
  swp::PipelinePlan plan;
  plan.add({"A"}, {.stream = "emb_lookup"});
  plan.pipeline_depth = 1;
  plan.stream_aliases = {{"emb_lookup", "data_dist"}, {"b", "c"}};
  CHECK(swp::plan_to_json(plan).ends_with(
      "  \"pipeline_depth\": 1,\n"
      "  \"stream_aliases\": {\"b\": \"c\", \"emb_lookup\": \"data_dist\"}\n"
      "}\n"));
  plan.stream_aliases.clear();
  CHECK_FALSE(contains(swp::plan_to_json(plan), "stream_aliases"));
}

TEST_CASE("plan_to_json writes names that are no UTF-8 with U+FFFD for each maximal subpart") {
  // validate() refuses such a plan, but one built in code may still be written: as JSON.
  const std::string fffd = "\uFFFD";
  swp::PipelinePlan plan;
  plan.add({"A\xff"}, {.stream = "s\xc0\x80", .thread_group = "g\xed\xa0\x80"});
  plan.add({"B\xe6\x97\xa5"});
  plan.intra_iter_deps = {{"B\xe6\x97\xa5", "A\xff"}};
  // E4 B8 is a sequence cut short: one U+FFFD for both bytes.
  plan.stream_aliases = {{"x\xe4\xb8", "s\xc0\x80"}};
  const auto parsed = swp::parse_plan(swp::plan_to_json(plan));  // throws when it is no JSON
  REQUIRE(parsed.plan.tasks.size() == 2);
  CHECK(parsed.plan.tasks[0].task.name == "A" + fffd);
  CHECK(parsed.plan.tasks[0].schedule.stream == "s" + fffd + fffd);
  CHECK(parsed.plan.tasks[0].schedule.thread_group == "g" + fffd + fffd + fffd);
  CHECK(parsed.plan.tasks[1].task.name == "B\xe6\x97\xa5");  // well-formed: as it was
  REQUIRE(parsed.plan.intra_iter_deps.size() == 1);
  CHECK(parsed.plan.intra_iter_deps[0].depends_on.name() == "A" + fffd);
  CHECK(parsed.plan.stream_aliases ==
        std::map<std::string, std::string>{{"x" + fffd, "s" + fffd + fffd}});
}

TEST_CASE("a task's stream_priority is read as an integer and written after globally_ordered") {
  const auto parsed = swp::parse_plan(R"({"tasks": [
    {"name": "H2D", "stream": "memcpy", "stream_priority": -1},
    {"name": "Fwd"}
  ]})");
  CHECK(parsed.warnings.empty());  // a known key
  CHECK(parsed.plan.tasks.at(0).schedule.stream_priority == -1);
  CHECK_FALSE(parsed.plan.tasks.at(1).schedule.stream_priority);
  const auto json = swp::plan_to_json(parsed.plan);
  CHECK(contains(json, R"("stream": "memcpy", "thread_group": "default", )"
                       R"("globally_ordered": false, "stream_priority": -1})"));
  CHECK(contains(json, R"("name": "Fwd", "stage": 0, "stream": "default", "thread_group": )"
                       R"("default", "globally_ordered": false})"));  // unset: not written
  CHECK_THROWS_WITH_AS(
      swp::parse_plan(R"({"tasks": [{"name": "A", "stream_priority": "high"}]})"),
      doctest::Contains("tasks[0] (A).stream_priority: expected an integer"), swp::PlanFormatError);
  CHECK_THROWS_WITH_AS(
      swp::parse_plan(R"({"tasks": [{"name": "A", "stream_priority": -1.5}]})"),
      doctest::Contains("tasks[0] (A).stream_priority"), swp::PlanFormatError);
}

TEST_CASE("malformed JSON is reported with its line and column") {
  SUBCASE("a missing comma on line 3") {
    const auto e = format_error("{\n  \"tasks\": [\n    {\"name\": \"H2D\" \"stage\": 0}\n  ]\n}\n");
    CHECK(e.line() == 3);
    CHECK(e.column() == 20);  // the '"' of "stage", where a ',' or '}' was expected
    CHECK(e.field().empty());
    CHECK(e.source() == "plan.json");
    CHECK(std::string(e.what()).starts_with("plan.json:3:20: malformed JSON: "));
  }
  SUBCASE("a missing colon on the first line") {
    const auto e = format_error(R"({"tasks" [{"name": "A"}]})");
    CHECK(e.line() == 1);
    CHECK(e.column() == 10);  // the '[' where the ':' belongs
    CHECK(std::string(e.what()).starts_with("plan.json:1:10: malformed JSON: "));
  }
  SUBCASE("text that ends inside a value") {
    const auto e = format_error("{\"tasks\": [\n{\"name\": \"A\"}");
    CHECK(e.line() == 2);
    CHECK(contains(e.what(), "malformed JSON"));
  }
  SUBCASE("an empty input") {
    const auto e = format_error("");
    CHECK(e.line() == 1);
    CHECK(contains(e.what(), "malformed JSON"));
  }
  SUBCASE("trailing garbage after the plan") {
    const auto e = format_error("{\"tasks\": []}\n\nnope");
    CHECK(e.line() == 3);
    CHECK(e.column() == 1);
  }
}

TEST_CASE("a field of the wrong type names the field and what was expected") {
  struct Case {
    std::string json, field, message;
  };
  const Case cases[] = {
      {one_task(R"(, "stage": "two")"), "tasks[0] (H2D).stage",
       R"(expected an integer, got string "two")"},
      {one_task(R"(, "stage": 1.5)"), "tasks[0] (H2D).stage", "expected an integer"},
      {one_task(R"(, "stage": 3000000000)"), "tasks[0] (H2D).stage", "out of range"},
      {one_task(R"(, "stream": 7)"), "tasks[0] (H2D).stream", "expected a string, got number 7"},
      {one_task(R"(, "stream": "")"), "tasks[0] (H2D).stream", "expected a non-empty string"},
      {one_task(R"(, "thread_group": null)"), "tasks[0] (H2D).thread_group",
       "expected a string, got null"},
      {one_task(R"(, "globally_ordered": 1)"), "tasks[0] (H2D).globally_ordered",
       "expected true or false"},
      {one_task(R"(, "cpu_us": -1)"), "tasks[0] (H2D).cpu_us",
       "expected a non-negative number of microseconds"},
      {one_task(R"(, "device_us": "fast")"), "tasks[0] (H2D).device_us",
       "expected a number of microseconds"},
      {one_task(R"(, "jitter_every": -2)"), "tasks[0] (H2D).jitter_every",
       "expected an integer >= 0"},
      {one_task(R"(, "jitter_device_us": -0.5)"), "tasks[0] (H2D).jitter_device_us",
       "non-negative"},
      {R"({"tasks": [{"name": "A"}, {"stage": 1}]})", "tasks[1]", R"(missing required key "name")"},
      {R"({"tasks": [{"name": ""}]})", "tasks[0].name", "expected a non-empty string"},
      {R"({"tasks": [{"name": 5}]})", "tasks[0].name", "expected a string"},
      {R"({"tasks": ["H2D"]})", "tasks[0]", "expected an object"},
      {R"({"tasks": {}})", "tasks", "expected an array, got an object"},
      {R"({"intra_iter_deps": []})", "plan", R"(missing required key "tasks")"},
      {R"([1, 2])", "plan", "expected an object, got an array"},
      {R"({"tasks": [{"name": "A"}], "intra_iter_deps": [["A", "B", "C"]]})", "intra_iter_deps[0]",
       "expected a pair [task, depends_on], got 3 element(s)"},
      {R"({"tasks": [{"name": "A"}], "inter_iter_deps": [["A"]]})", "inter_iter_deps[0]",
       "got 1 element(s)"},
      {R"({"tasks": [{"name": "A"}], "inter_iter_deps": [["A", 2]]})", "inter_iter_deps[0][1]",
       "expected a string"},
      {R"({"tasks": [{"name": "A"}], "intra_iter_deps": "A"})", "intra_iter_deps",
       "expected an array"},
      {R"({"tasks": [{"name": "A"}], "pipeline_depth": 0})", "pipeline_depth",
       "expected an integer >= 1"},
      {R"({"tasks": [{"name": "A"}], "pipeline_depth": "3"})", "pipeline_depth",
       "expected an integer"},
      {R"({"tasks": [{"name": "A"}], "stream_aliases": [["a", "b"]]})", "stream_aliases",
       "expected an object, got an array"},
      {R"({"tasks": [{"name": "A"}], "stream_aliases": {"emb_lookup": 3}})",
       "stream_aliases.emb_lookup", "expected a string, got number 3"},
      {R"({"tasks": [{"name": "A"}], "stream_aliases": {"emb_lookup": ""}})",
       "stream_aliases.emb_lookup", "expected a non-empty string"},
      {R"({"tasks": [{"name": "A"}], "stream_aliases": {"": "data_dist"}})", "stream_aliases",
       "an alias name is empty"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.json);
    const auto e = format_error(c.json);
    CHECK(e.field() == c.field);
    CHECK(e.line() == 0);
    CHECK(e.source() == "plan.json");
    const std::string what = e.what();
    CHECK(what.starts_with("plan.json: " + c.field + ": "));
    CHECK(contains(what, c.message));
  }
}

TEST_CASE("an unknown key is a warning naming it, not an error") {
  const auto parsed = swp::parse_plan(
      R"({"tasks": [{"name": "A", "stgae": 2}], "comment": "hi", "pipeline_depth": 1})",
      "plan.json");
  CHECK(parsed.plan.tasks.at(0).schedule.stage == 0);
  REQUIRE(parsed.warnings.size() == 2);
  CHECK(contains(parsed.warnings[0], "plan.json: comment: unknown key ignored"));
  CHECK(parsed.warnings[1].starts_with("plan.json: tasks[0].stgae: unknown key ignored"));
  CHECK(contains(parsed.warnings[1], "stage"));  // lists the known keys
}

TEST_CASE("parsing does not validate: a rule-breaking plan still parses") {
  const auto parsed = swp::parse_plan(
      R"({"tasks": [{"name": "A"}, {"name": "A", "stage": -1}], "intra_iter_deps": [["A", "Ghost"]]})");
  CHECK(parsed.plan.tasks.size() == 2);
  CHECK(parsed.plan.tasks[1].schedule.stage == -1);
  CHECK_THROWS_AS((void)swp::validate(parsed.plan), swp::PlanError);
}

TEST_CASE("load_plan reads a file and names it in errors") {
  SUBCASE("a seed plan") {
    const auto parsed = swp::load_plan(swp::test::seed_plan_path("sparse_dist").string());
    CHECK(parsed.plan.tasks.size() == 8);
    CHECK(parsed.plan.pipeline_depth == 3);
    check_same_plan(parsed.plan, swp::test::sparse_dist_plan());
  }
  SUBCASE("a file with an error") {
    const TempFile file(one_task(R"(, "stage": "two")"));
    try {
      (void)swp::load_plan(file.str());
      FAIL("load_plan accepted a bad plan");
    } catch (const swp::PlanFormatError& e) {
      CHECK(e.source() == file.str());
      CHECK(std::string(e.what()).starts_with(file.str() + ": tasks[0] (H2D).stage: "));
    }
  }
  SUBCASE("a missing file") {
    const std::string path = "/nonexistent/dir/plan.json";
    try {
      (void)swp::load_plan(path);
      FAIL("load_plan read a missing file");
    } catch (const swp::PlanFormatError& e) {
      CHECK(e.source() == path);
      CHECK(contains(e.what(), path));
      CHECK(contains(e.what(), "cannot open"));
    }
  }
}

TEST_CASE("load_plan reads FIFOs, and tells a directory and an endless input apart") {
  SUBCASE("a directory is named as one") {
    try {
      (void)swp::load_plan("/");
      FAIL("load_plan read a directory");
    } catch (const swp::PlanReadError& e) {
      CHECK(contains(e.what(), "is a directory"));
    }
  }
  SUBCASE("a FIFO (a process substitution) is read like a file") {
    const TempFile plan(one_task(R"(, "stage": 0)"));
    const std::string fifo = plan.str() + ".fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // The writer opens its end once the reader has (non-blocking opens fail until then), so
    // that a reader that never comes cannot hang the test: the writer gives up after a while.
    std::thread writer([&] {
      const std::string text = one_task(R"(, "stage": 1)");
      for (int attempt = 0; attempt < 30'000; ++attempt) {
        const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
        if (fd >= 0) {
          (void)!::write(fd, text.data(), text.size());
          ::close(fd);
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    const auto parsed = swp::load_plan(fifo);
    writer.join();
    std::filesystem::remove(fifo);
    REQUIRE(parsed.plan.tasks.size() == 1);
    CHECK(parsed.plan.tasks[0].schedule.stage == 1);
  }
  SUBCASE("an input larger than any plan ends in an error, not in memory exhaustion") {
    // /dev/zero never ends: reading it whole never finished.
    try {
      (void)swp::load_plan("/dev/zero");
      FAIL("load_plan read /dev/zero");
    } catch (const swp::PlanFormatError& e) {
      CHECK(contains(e.what(), "larger than any plan"));
    }
  }
}

TEST_CASE("a key given twice in one object is an error at the key, not the last value") {
  // Boost.JSON keeps the last value silently: {"cpu_us": -1, "cpu_us": 1} passed.
  const auto e = format_error("{\"tasks\": [{\"name\": \"A\",\n  \"cpu_us\": -1, \"cpu_us\": 1}]}");
  CHECK(e.line() == 2);
  CHECK(e.column() == 17);  // the second "cpu_us"
  CHECK(contains(e.what(), "duplicate key \"cpu_us\""));
  SUBCASE("at any depth, top level included") {
    const auto top = format_error(R"({"tasks": [{"name": "A"}], "tasks": []})");
    CHECK(contains(top.what(), "duplicate key \"tasks\""));
  }
  SUBCASE("the same key in different objects is fine") {
    const auto parsed = swp::parse_plan(
        R"({"tasks": [{"name": "A", "stage": 0}, {"name": "B", "stage": 0}]})");
    CHECK(parsed.plan.tasks.size() == 2);
  }
}

TEST_CASE("a name with a C1 control or a Unicode line separator is rejected by the reader") {
  for (const std::string name : {R"(A\u0085B)", R"(C\u009b2J)", R"(D\u2028E)", R"(F\u2029)"}) {
    CAPTURE(name);
    const auto e = format_error(R"({"tasks": [{"name": ")" + name + R"("}]})");
    CHECK(e.field() == "tasks[0].name");
    CHECK(contains(e.what(), "control characters"));
  }
}

TEST_CASE("a duplicate key written with escapes is reported at the second key") {
  // The position was searched as the unescaped spelling, found at the first key.
  const auto e = format_error("{\"tasks\": [{\"name\": \"A\"}],\n \"t\\u0061sks\": []}");
  CHECK(e.line() == 2);
  CHECK(e.column() == 2);
  CHECK(contains(e.what(), "duplicate key \"tasks\""));
  SUBCASE("the unescaped spelling inside a string before it is no key") {
    const auto f =
        format_error("{\"tasks\": [{\"name\": \"\\\"x\\\"\", \"x\": 1,\n  \"\\u0078\": 2}]}");
    CHECK(f.line() == 2);
    CHECK(f.column() == 3);
  }
}

TEST_CASE("a name with a control character is rejected naming the field, shown escaped") {
  struct Case {
    std::string json, field;
  };
  const std::vector<Case> cases{
      {R"({"tasks": [{"name": "a\nb"}]})", "tasks[0].name"},
      {R"({"tasks": [{"name": "a\u0000"}]})", "tasks[0].name"},
      {R"({"tasks": [{"name": "A", "stream": "\u001b[31mred"}]})", "tasks[0] (A).stream"},
      {R"({"tasks": [{"name": "A", "thread_group": "l\r"}]})", "tasks[0] (A).thread_group"},
      {R"({"tasks": [{"name": "A"}], "intra_iter_deps": [["A", "\u007f"]]})",
       "intra_iter_deps[0][1]"},
      {R"({"tasks": [{"name": "A"}], "stream_aliases": {"x\ty": "default"}})", "stream_aliases"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.json);
    const auto e = format_error(c.json);
    CHECK(e.field() == c.field);
    CHECK(contains(e.what(), "control characters"));
    const std::string what = e.what();
    CHECK(std::none_of(what.begin(), what.end(),
                       [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }));
  }
}

}  // namespace test_plan_json
