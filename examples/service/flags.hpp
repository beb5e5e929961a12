#pragma once
// Flags: the command-line parser of the service's two programs (`--name value` or
// `--name=value`), whose errors name the flag, as the `swp` command's do.

#include <charconv>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace service {

/// A bad command line; what() names the flag or argument ("--port: expected an integer in
/// 0..65535, got 'x'"). The programs print it as `error: ...` and exit 2.
class FlagError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Declared flags, then parse(). Each flag is optional and keeps its target's value when not
/// given.
///
/// Example:
/// ```
/// service::Flags flags("micro_batch_service", "a micro-batching TCP service");
/// std::int64_t port = 0;
/// flags.integer("port", port, 0, 65535, "port on 127.0.0.1 (0: any free port)");
/// auto rest = flags.parse(argc, argv);  // what follows `--`, if anything
/// ```
class Flags {
 public:
  Flags(std::string program, std::string summary)
      : program_(std::move(program)), summary_(std::move(summary)) {}

  void integer(const std::string& name, std::int64_t& target, std::int64_t min, std::int64_t max,
               std::string help) {
    declare(name, std::move(help), std::to_string(target),
            [&target, min, max, name](std::string_view v) {
              std::int64_t value = 0;
              const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
              if (ec != std::errc() || end != v.data() + v.size() || value < min || value > max)
                throw FlagError("--" + name + ": expected an integer in " + std::to_string(min) +
                                ".." + std::to_string(max) + ", got '" + std::string(v) + "'");
              target = value;
            });
  }

  void real(const std::string& name, double& target, double min, double max, std::string help) {
    std::ostringstream def;
    def << target;
    declare(name, std::move(help), def.str(), [&target, min, max, name](std::string_view v) {
      double value = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (ec != std::errc() || end != v.data() + v.size() || !(value >= min && value <= max)) {
        std::ostringstream msg;
        msg << "--" << name << ": expected a number in " << min << ".." << max << ", got '" << v
            << "'";
        throw FlagError(msg.str());
      }
      target = value;
    });
  }

  void text(const std::string& name, std::string& target, std::string help) {
    declare(name, std::move(help), target, [&target, name](std::string_view v) {
      if (v.empty()) throw FlagError("--" + name + ": expected a value, got ''");
      target = std::string(v);
    });
  }

  /// Parses argv[1..]; returns the arguments after a `--` (none without one). Throws
  /// FlagError for an unknown flag, a missing or bad value, a flag given twice, or a
  /// positional argument. `--help` sets help_requested() and parses nothing more.
  std::vector<std::string> parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--") return {argv + i + 1, argv + argc};
      if (arg == "--help" || arg == "-h") {
        help_ = true;
        return {};
      }
      if (!arg.starts_with("--")) throw FlagError("unexpected argument '" + std::string(arg) + "'");
      std::string name(arg.substr(2));
      std::string value;
      bool inline_value = false;
      if (const auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        inline_value = true;
      }
      const auto flag = flags_.find(name);
      if (flag == flags_.end()) throw FlagError("unknown flag '--" + name + "' (see --help)");
      if (!given_.insert(name).second) throw FlagError("--" + name + ": given twice");
      if (!inline_value) {
        if (i + 1 >= argc) throw FlagError("--" + name + ": missing value");
        value = argv[++i];
      }
      flag->second.set(value);
    }
    return {};
  }

  /// parse() for a program that takes nothing after `--`: the exit code main() returns now —
  /// 2 after printing `error: <what>` to stderr for a bad flag, 0 after printing usage() for
  /// --help — or nothing, and the program goes on.
  [[nodiscard]] std::optional<int> parse_or_exit(int argc, char** argv) {
    try {
      if (!parse(argc, argv).empty()) throw FlagError("unexpected arguments after '--'");
    } catch (const FlagError& e) {
      std::cerr << "error: " << e.what() << '\n';
      return 2;
    }
    if (help_) {
      std::cout << usage();
      return 0;
    }
    return std::nullopt;
  }

  [[nodiscard]] bool given(const std::string& name) const { return given_.contains(name); }
  [[nodiscard]] bool help_requested() const noexcept { return help_; }

  [[nodiscard]] std::string usage() const {
    std::ostringstream out;
    out << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
    for (const auto& name : order_) {
      const Flag& f = flags_.at(name);
      out << "  --" << name << " (default " << (f.default_value.empty() ? "none" : f.default_value)
          << ")\n      " << f.help << '\n';
    }
    return out.str();
  }

 private:
  struct Flag {
    std::string help;
    std::string default_value;
    std::function<void(std::string_view)> set;
  };

  void declare(const std::string& name, std::string help, std::string default_value,
               std::function<void(std::string_view)> set) {
    flags_[name] = Flag{std::move(help), std::move(default_value), std::move(set)};
    order_.push_back(name);
  }

  std::string program_;
  std::string summary_;
  std::map<std::string, Flag> flags_;
  std::vector<std::string> order_;
  std::set<std::string> given_;
  bool help_ = false;
};

}  // namespace service
