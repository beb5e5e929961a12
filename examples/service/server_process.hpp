#pragma once
// ServerProcess: the service started as a child process by the load generator (--spawn):
// its `listening <port>` line, SIGTERM, and its exit.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace service {

/// A child process running `path args...`, its stdout read through a pipe (stderr is
/// inherited). Destroying it kills (SIGKILL) and reaps a child still running, so a load
/// generator that fails never leaves a server behind.
class ServerProcess {
 public:
  using Clock = std::chrono::steady_clock;

  /// Starts the child; `fd_limit` > 0 sets its RLIMIT_NOFILE (soft and hard, as `ulimit -n`
  /// does) before it executes. Throws std::runtime_error when it cannot start.
  ServerProcess(const std::string& path, const std::vector<std::string>& args,
                rlim_t fd_limit = 0) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(errno_text("pipe"));
    std::vector<std::string> words{path};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(errno_text("fork"));
    if (pid_ == 0) {  // the child: only async-signal-safe calls until exec
      ::dup2(fds[1], STDOUT_FILENO);
      if (fd_limit > 0) {
        const rlimit limit{fd_limit, fd_limit};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
          const char msg[] = "error: --spawn: cannot set the server's descriptor limit\n";
          [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
          ::_exit(127);
        }
      }
      ::execv(path.c_str(), argv.data());
      const char msg[] = "error: --spawn: cannot execute the server\n";
      [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (out_ >= 0) ::close(out_);
  }

  /// Reads the child's stdout until its `listening <port>` line; returns the port. Throws
  /// std::runtime_error (with what it printed) when it exits or says nothing within `timeout`.
  std::uint16_t wait_listening(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      for (std::size_t eol; (eol = buffer_.find('\n')) != std::string::npos;) {
        const std::string line = buffer_.substr(0, eol);
        buffer_.erase(0, eol + 1);
        if (line.rfind("listening ", 0) == 0)
          return static_cast<std::uint16_t>(std::stoi(line.substr(10)));
        seen_ += line + '\n';
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0 || !read_some(static_cast<int>(left.count())))
        throw std::runtime_error("the server did not print 'listening <port>'" +
                                 (seen_.empty() ? std::string() : "; it printed: " + seen_));
    }
  }

  /// The child's process id.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  /// Kills the child at once (SIGKILL); wait() then reports it.
  void kill() {
    if (pid_ > 0 && !exited_) ::kill(pid_, SIGKILL);
  }

  /// Sends SIGTERM (the service's graceful shutdown).
  void terminate() {
    if (pid_ > 0 && !exited_) ::kill(pid_, SIGTERM);
  }

  /// Waits for the child to exit, reading its stdout meanwhile; returns its exit code (128 +
  /// the signal when a signal ended it). Past `timeout` it kills the child and throws
  /// std::runtime_error: a server that does not shut down is a failure.
  int wait(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    for (;;) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (Clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        exited_ = true;
        throw std::runtime_error("the server did not exit within " +
                                 std::to_string(timeout.count()) + " ms of SIGTERM (killed)");
      }
      if (!read_some(10)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    exited_ = true;
    while (read_some(100)) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  /// What the child printed on stdout after its `listening` line (complete once it exited).
  [[nodiscard]] const std::string& output() const noexcept { return buffer_; }

 private:
  static std::string errno_text(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
  }

  // Appends what the pipe has within `timeout_ms`; false at end of file or when nothing came.
  bool read_some(int timeout_ms) {
    if (out_ < 0) return false;
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char chunk[4096];
    const ssize_t n = ::read(out_, chunk, sizeof chunk);
    if (n <= 0) {
      ::close(out_);
      out_ = -1;
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  bool exited_ = false;
  std::string buffer_;  // stdout not consumed yet
  std::string seen_;    // lines before `listening`
};

}  // namespace service
