// CollectStacks and StackCollection; see stack_collector.h.
#include "stack_collector.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>

#include "ddprun/base/files.h"
#include "ddprun/base/parsing.h"
#include "python_hook.h"

extern char** environ;

namespace ddprun {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kExcerptFrames = 6;
constexpr size_t kOutputLimit = 4 << 20;  // of gdb's output kept

// gdb's output for `pid`, or why there is none. Runs gdb with its output in a pipe, kills it if it
// takes longer than `timeout`.
std::string NativeStacks(pid_t pid, std::chrono::milliseconds timeout, bool& collected) {
  collected = false;
  int output[2];
  if (::pipe2(output, O_CLOEXEC) != 0) {
    return std::string("no native stacks: cannot create a pipe: ") + std::strerror(errno);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&attributes, &signals);
  sigfillset(&signals);
  posix_spawnattr_setsigdefault(&attributes, &signals);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const std::string pid_text = std::to_string(pid);
  const char* argv[] = {"gdb",
                        "--batch",
                        "-nx",
                        "-p",
                        pid_text.c_str(),
                        "-ex",
                        "set pagination off",
                        "-ex",
                        "thread apply all bt",
                        nullptr};
  pid_t gdb = -1;
  const int spawned =
      ::posix_spawnp(&gdb, "gdb", &actions, &attributes, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(output[1]);
  if (spawned != 0) {
    ::close(output[0]);
    if (spawned == ENOENT) return "no native stacks: gdb is not installed (apt install gdb)";
    return std::string("no native stacks: cannot run gdb: ") + std::strerror(spawned);
  }
  std::string text;
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd readable {
      output[0], POLLIN, 0
    };
    const int ready = ::poll(&readable, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[16384];
    const ssize_t n = ::read(output[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < kOutputLimit) text.append(buffer, static_cast<size_t>(n));
  }
  ::close(output[0]);
  if (timed_out) ::kill(gdb, SIGKILL);
  int status = 0;
  while (::waitpid(gdb, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return "no native stacks: gdb did not finish within " + std::to_string(timeout.count()) +
           " ms\n" + text;
  }
  if (text.find("ptrace: Operation not permitted") != std::string::npos) {
    auto scope = ReadFileHead("/proc/sys/kernel/yama/ptrace_scope", 16);
    return "no native stacks: the kernel refused gdb's ptrace attach" +
           (scope.ok() ? " (kernel.yama.ptrace_scope=" + Trim(*scope) + ")" : std::string()) +
           "\n" + text;
  }
  collected = text.find("\n#0 ") != std::string::npos || text.rfind("#0 ", 0) == 0;
  return text;
}

// The state letter of /proc/<pid>/stat: 'T' when stopped.
char ProcessState(pid_t pid) {
  auto stat = ReadFileHead("/proc/" + std::to_string(pid) + "/stat", 512);
  if (!stat.ok()) return '?';
  const size_t paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() ? '?' : (*stat)[paren + 2];
}

// The name of the program `pid` runs ("python3.11"), or "".
std::string ExecutableName(pid_t pid) {
  char target[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return "";
  const std::string path(target, static_cast<size_t>(n));
  return path.substr(path.rfind('/') + 1);
}

off_t SizeOf(const std::string& path) {
  struct stat about {};
  return ::stat(path.c_str(), &about) == 0 ? about.st_size : -1;
}

// The Python stacks a worker that armed the hook dumps on the signal, or why there are none.
// `stopped`: the worker is (it cannot run the handler).
std::string PythonStacks(const StackRequest& request, bool stopped, bool& collected) {
  collected = false;
  const std::string file = PythonStacksFile(request.python_stacks_dir, request.pid);
  const off_t before = SizeOf(file);
  if (before < 0) {
    return "no Python stacks: the worker did not arm ddprun's Python hook (not Python, run with "
           "-E or -I, or it replaced PYTHONPATH)";
  }
  if (stopped) {
    return "no Python stacks: the worker is stopped (SIGSTOP or a debugger) and cannot run its "
           "faulthandler";
  }
  if (::kill(request.pid, PythonStacksSignal()) != 0) {
    return std::string("no Python stacks: cannot signal the worker: ") + std::strerror(errno);
  }
  // faulthandler writes from its signal handler at once; wait until the file stops growing.
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  off_t last = before;
  auto last_change = Clock::now();
  while (Clock::now() < deadline) {
    ::usleep(20'000);
    const off_t now = SizeOf(file);
    if (now != last) {
      last = now;
      last_change = Clock::now();
    } else if (now > before && Clock::now() - last_change > std::chrono::milliseconds(100)) {
      break;
    }
  }
  if (last <= before) return "no Python stacks: the worker did not dump them within 3 s";
  auto text = ReadFileHead(file, static_cast<size_t>(last));
  if (!text.ok()) return "no Python stacks: " + text.status().message();
  collected = true;
  return text->substr(static_cast<size_t>(before));
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The main thread's innermost Python frames: the first "File" lines of the current thread (the
// one that ran the signal handler: the main thread) or else the first thread.
std::vector<std::string> PythonExcerpt(const std::string& dump) {
  const auto lines = Lines(dump);
  size_t start = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("Current thread", 0) == 0) {
      start = i;
      break;
    }
  }
  std::vector<std::string> frames;
  for (size_t i = start + 1; i < lines.size() && frames.size() < kExcerptFrames; ++i) {
    const std::string line = Trim(lines[i]);
    if (line.rfind("File ", 0) != 0) break;
    frames.push_back(line);
  }
  return frames;
}

// The main thread's (LWP = pid) innermost native frames, without their addresses.
std::vector<std::string> NativeExcerpt(const std::string& gdb_output, pid_t pid) {
  const auto lines = Lines(gdb_output);
  const std::string main_thread = "(LWP " + std::to_string(pid) + ")";
  size_t start = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("Thread ", 0) == 0 && lines[i].find(main_thread) != std::string::npos) {
      start = i + 1;
      break;
    }
  }
  if (start == lines.size()) start = 0;  // one thread: gdb prints no heading
  std::vector<std::string> frames;
  for (size_t i = start; i < lines.size() && frames.size() < kExcerptFrames; ++i) {
    std::string line = Trim(lines[i]);
    if (line.rfind("#", 0) != 0) {
      if (!frames.empty()) break;
      continue;
    }
    // "#1  0x00007f... in nanosleep () from ..." -> "#1 nanosleep () from ..."
    const size_t number_end = line.find(' ');
    if (number_end == std::string::npos) continue;
    std::string rest = Trim(line.substr(number_end));
    const size_t in = rest.find(" in ");
    if (rest.rfind("0x", 0) == 0 && in != std::string::npos) rest = rest.substr(in + 4);
    frames.push_back(line.substr(0, number_end) + " " + rest);
  }
  return frames;
}

CollectedStacks CollectOne(const StackRequest& request, std::chrono::milliseconds timeout) {
  const bool stopped = ProcessState(request.pid) == 'T';
  // A Python worker: one that armed the hook, or runs a Python interpreter.
  const bool python_worker =
      !request.python_stacks_dir.empty() &&
      (SizeOf(PythonStacksFile(request.python_stacks_dir, request.pid)) >= 0 ||
       ExecutableName(request.pid).rfind("python", 0) == 0);
  std::string python;
  bool python_collected = false;
  if (python_worker) python = PythonStacks(request, stopped, python_collected);
  bool native_collected = false;
  const std::string native = NativeStacks(request.pid, timeout, native_collected);

  std::string file = request.heading + "\n";
  if (stopped) file += "the worker was stopped (SIGSTOP, Ctrl-Z or a debugger)\n";
  file += "\n";
  if (python_worker) {
    file += "== Python stacks of pid " + std::to_string(request.pid) + " ==\n" + python + "\n";
  }
  file += "== native stacks of pid " + std::to_string(request.pid) + " (gdb) ==\n" + native + "\n";
  CollectedStacks result;
  result.stacks_file = request.stacks_file;
  if (Status s = WriteFileAtomically(request.stacks_file, file); !s.ok()) {
    result.stacks_file.clear();
    result.excerpt = "the stacks could not be saved: " + s.message() + "\n";
  }
  std::vector<std::string> frames;
  if (stopped) frames.push_back("(stopped: SIGSTOP, Ctrl-Z or a debugger)");
  if (python_collected) {
    for (auto& frame : PythonExcerpt(python)) frames.push_back(std::move(frame));
  }
  if (native_collected) {
    for (auto& frame : NativeExcerpt(native, request.pid)) {
      if (frames.size() >= kExcerptFrames) break;
      frames.push_back(std::move(frame));
    }
  }
  if (frames.empty()) {
    // Why none: the first line of each explanation.
    if (!python_collected && !python.empty()) frames.push_back(python.substr(0, python.find('\n')));
    if (!native_collected) frames.push_back(native.substr(0, native.find('\n')));
  }
  for (const auto& frame : frames) result.excerpt += frame + "\n";
  return result;
}

}  // namespace

std::string FormatForConsole(int global_rank, const CollectedStacks& stacks) {
  std::string text = "ddprun: stacks of rank " + std::to_string(global_rank) + ": " +
                     (stacks.stacks_file.empty() ? "not saved" : stacks.stacks_file) + "\n";
  for (const std::string& frame : Lines(stacks.excerpt)) text += "    " + frame + "\n";
  return text;
}

std::vector<CollectedStacks> CollectStacks(const std::vector<StackRequest>& requests,
                                           std::chrono::milliseconds timeout) {
  std::vector<CollectedStacks> results(requests.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < requests.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = CollectOne(requests[i], timeout); });
  }
  for (auto& thread : threads) thread.join();
  return results;
}

StackCollection::StackCollection(boost::asio::io_context& io, std::vector<StackRequest> requests,
                                 std::chrono::milliseconds timeout,
                                 std::function<void(std::vector<CollectedStacks>)> done)
    : alive_(std::make_shared<bool>(true)) {
  thread_ = std::thread(
      [&io, requests = std::move(requests), timeout, done = std::move(done), alive = alive_] {
        auto results = CollectStacks(requests, timeout);
        boost::asio::post(io, [done, alive, results = std::move(results)]() mutable {
          if (*alive) done(std::move(results));
        });
      });
}

StackCollection::~StackCollection() {
  *alive_ = false;  // on the loop's thread, as the handler runs: no race
  if (thread_.joinable()) thread_.join();
}

}  // namespace ddprun
