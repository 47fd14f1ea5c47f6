// test_worker: the worker program of the launcher's integration tests. One mode per behaviour a
// test needs; every mode is deterministic and ends by itself or by a signal the test sends.
//
//   env                      print every variable of the contract as "KEY=VALUE"
//   args ARG...              print each argument as "arg[i]=<arg>"
//   chatty LINES             print LINES lines of varying length (up to 10 KiB) to stdout and
//                            stderr, each "R:i:<payload of R's letter>", in many small writes
//   partial                  write "no newline at the end" without a final newline
//   fail-once CODE           print "started attempt N"; in attempt 0 rank 1 exits CODE once the
//                            others are ready, and the others print the signal that stops
//                            them; in later attempts every rank exits 0
//   exit RANK CODE           rank RANK exits CODE at once, the others exit 0
//   kill-self RANK SIGNAL    rank RANK raises SIGNAL, the others exit 0
//   error-file RANK          rank RANK writes a torchrun-style error file and exits 1
//   wait-for-signal          print "ready <pid>", then on SIGTERM/SIGINT/SIGHUP print
//                            "got <SIGNAME>" and exit 0
//   ignore-term              print "ready <pid>", ignore SIGTERM, wait forever
//   rank0-exits              print "ready <pid>"; rank 0 then exits 0, the others wait for a
//                            signal as wait-for-signal does
//   until-world N            print "ready world=W restart=C pid=P"; exit 0 when WORLD_SIZE is
//                            N, else wait for a stop signal as wait-for-signal does
//   store                    exercise every store operation against the job's store
//   touch PATH               create PATH (proves the program was started)
//   terminal                 print which of stdin, stdout, stderr are terminals, the stdout
//                            terminal's size, and a word in green where stdout is a terminal
//   stdio-lines FIFO         print three lines through C stdio left as the C library sets it
//                            up (line-buffered on a terminal, block-buffered on a pipe), each
//                            after the first once a byte can be read from FIFO
//   window-change            print the terminal's size, then again once SIGWINCH arrives
//   killed-with-shm          create shared memory named as a rank names its own, print
//                            "shm <name>" and kill itself with SIGKILL, as if killed in the
//                            middle of setting up its ring or registered buffer
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ddp/environment.h"
#include "ddprun/base/rank_shared_memory.h"
#include "ddprun/rendezvous/store_client.h"

namespace {

int Rank() {
  const char* rank = std::getenv("RANK");
  return rank ? std::atoi(rank) : -1;
}

// Writes all of `text` with one write per call, so a line is never split by us.
void Write(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

int PrintEnvironment() {
  const char* names[] = {"LOCAL_RANK",
                         "RANK",
                         "GROUP_RANK",
                         "ROLE_RANK",
                         "ROLE_NAME",
                         "LOCAL_WORLD_SIZE",
                         "WORLD_SIZE",
                         "GROUP_WORLD_SIZE",
                         "ROLE_WORLD_SIZE",
                         "MASTER_ADDR",
                         "MASTER_PORT",
                         "TORCHELASTIC_RESTART_COUNT",
                         "TORCHELASTIC_MAX_RESTARTS",
                         "TORCHELASTIC_RUN_ID",
                         "TORCHELASTIC_ERROR_FILE",
                         "TORCHELASTIC_USE_AGENT_STORE",
                         "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                         "NCCL_ASYNC_ERROR_HANDLING",
                         "OMP_NUM_THREADS",
                         "DDPRUN_STORE_ADDR",
                         "DDPRUN_TOKEN",
                         "DDPRUN_JOB_ID",
                         "DDPRUN_ROUND",
                         "DDPRUN_PROGRESS_FILE",
                         "DDPRUN_PROGRESS_FD",
                         "DDPRUN_PYTHON_STACKS_DIR",
                         "PYTHONPATH",
                         "USER_MARKER"};
  for (const char* name : names) {
    const char* value = std::getenv(name);
    std::printf("%s=%s\n", name, value ? value : "<unset>");
  }
  return 0;
}

int Chatty(int lines) {
  const int rank = Rank();
  const char letter = static_cast<char>('a' + rank % 26);
  for (int i = 0; i < lines; ++i) {
    const size_t length = static_cast<size_t>((i * 7919 + rank * 104729) % 10240);
    std::string line =
        std::to_string(rank) + ":" + std::to_string(i) + ":" + std::string(length, letter) + "\n";
    // Many small writes per line, so the pipe sees lines in pieces.
    const int fd = i % 2 == 0 ? STDOUT_FILENO : STDERR_FILENO;
    for (size_t offset = 0; offset < line.size(); offset += 3000) {
      Write(fd, line.substr(offset, 3000));
    }
  }
  return 0;
}

volatile sig_atomic_t received_signal = 0;
void RecordSignal(int signal_number) { received_signal = signal_number; }

// Records SIGTERM, SIGINT, SIGHUP and SIGQUIT, which stay blocked until StopOnRecordedSignal:
// a signal that arrives early is not lost between a check and a wait.
void InstallSignalRecorder() {
  struct sigaction action {};
  action.sa_handler = RecordSignal;
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
    sigaction(s, &action, nullptr);
    sigaddset(&stop_signals, s);
  }
  sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
}

// Waits for a recorded signal, prints "got <SIGNAME>" and exits with `exit_code` at once
// (_exit): a worker told to stop has nothing to clean up, and under AddressSanitizer the
// exit-time leak check, which stops every thread of the process, was seen to outlast the
// agent's 30 s grace on a loaded machine, making the stop a SIGKILL.
[[noreturn]] void StopOnRecordedSignal(int exit_code) {
  sigset_t unblocked;
  sigemptyset(&unblocked);
  while (received_signal == 0) sigsuspend(&unblocked);
  std::printf("got SIG%s\n", sigabbrev_np(received_signal));
  std::fflush(stdout);
  ::_exit(exit_code);
}

int WaitForSignal() {
  InstallSignalRecorder();
  std::printf("ready %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  StopOnRecordedSignal(0);
}

int UntilWorld(int wanted) {
  InstallSignalRecorder();
  const char* world = std::getenv("WORLD_SIZE");
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  std::printf("ready world=%s restart=%s pid=%d\n", world ? world : "?", restart ? restart : "?",
              static_cast<int>(::getpid()));
  std::fflush(stdout);
  if (world != nullptr && std::atoi(world) == wanted) return 0;
  StopOnRecordedSignal(0);
}

int IgnoreTerm() {
  ::signal(SIGTERM, SIG_IGN);
  std::printf("ready %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  while (true) ::pause();
}

// Rank 1 fails in attempt 0 only once every other rank is ready to report the SIGTERM that
// ddprun's restart sends it (readiness is agreed through the store, so there is no race).
int FailOnce(int code) {
  const char* count = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const int attempt = count ? std::atoi(count) : -1;
  std::printf("started attempt %d\n", attempt);
  if (attempt != 0) return 0;
  auto store = ddprun::StoreClient::FromEnvironment();
  if (!store.ok()) return 70;
  const int world = std::atoi(std::getenv("WORLD_SIZE"));
  if (Rank() == 1) {
    if (!store.value()->Wait({"others-ready"}, std::chrono::seconds(60)).ok()) return 71;
    return code;
  }
  InstallSignalRecorder();
  auto ready = store.value()->Add("ready", 1);
  if (ready.ok() && ready.value() == world - 1) (void)store.value()->Set("others-ready", "1");
  StopOnRecordedSignal(1);  // stopped by ddprun for the restart; not counted as a failure
}

int Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok" : "FAILED", what.c_str());
  return ok ? 0 : 1;
}

int ExerciseStore() {
  auto store = ddprun::StoreClient::FromEnvironment();
  if (!store.ok()) return Check(false, "connect: " + store.status().ToString());
  auto& client = *store.value();
  const std::string me = "rank" + std::to_string(Rank());
  int failures = 0;
  failures += Check(client.Set(me, "value of " + me).ok(), "set");
  auto got = client.Get(me);
  failures += Check(got.ok() && got.value() == "value of " + me, "get");
  auto missing = client.Get(me + "-missing");
  failures += Check(missing.status().code() == ddprun::StatusCode::kNotFound, "get missing");
  auto first = client.CompareSet(me + "-cas", "", "one");
  auto second = client.CompareSet(me + "-cas", "wrong", "two");
  failures += Check(first.ok() && first->swapped && !second->swapped && second->value == "one",
                    "compare_set");
  auto deleted = client.Delete(me);
  failures += Check(deleted.ok() && deleted.value() && !client.Get(me).ok(), "delete");
  auto timed_out = client.Wait({me + "-never"}, std::chrono::milliseconds(50));
  failures += Check(timed_out.code() == ddprun::StatusCode::kDeadlineExceeded, "wait timeout");
  // Every rank counts itself in, then waits for all: a barrier through the store.
  auto world = std::atoi(std::getenv("WORLD_SIZE"));
  auto count = client.Add("arrivals", 1);
  if (count.ok() && count.value() == world) (void)client.Set("all-arrived", "yes");
  failures += Check(client.Wait({"all-arrived"}, std::chrono::seconds(60)).ok(), "barrier");
  auto total = client.Get("arrivals");
  failures += Check(total.ok() && std::atoi(total->c_str()) == world, "add");
  // The token is checked.
  ddprun::StoreClientOptions wrong = client.options();
  wrong.security.token = "not-the-token";
  auto intruder = ddprun::StoreClient::Connect(wrong);
  failures +=
      Check(intruder->Get("arrivals").status().code() == ddprun::StatusCode::kUnauthenticated,
            "wrong token refused");
  return failures == 0 ? 0 : 1;
}

}  // namespace

// What a terminal-aware program sees: isatty on each stream, the size, colour where it can.
int DescribeTerminal() {
  winsize window{};
  ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &window);
  std::printf("stdin=%d stdout=%d stderr=%d rows=%d cols=%d\n", ::isatty(STDIN_FILENO),
              ::isatty(STDOUT_FILENO), ::isatty(STDERR_FILENO), window.ws_row, window.ws_col);
  std::printf(::isatty(STDOUT_FILENO) ? "\x1b[32mgreen\x1b[0m\n" : "plain\n");
  return 0;
}

int StdioLines(const char* fifo) {
  const int go_on = ::open(fifo, O_RDONLY | O_CLOEXEC);
  if (go_on < 0) return 2;
  for (int i = 1; i <= 3; ++i) {
    std::printf("stdio line %d\n", i);
    char byte;
    if (i < 3 && ::read(go_on, &byte, 1) != 1) return 3;
  }
  return 0;
}

int window_changes[2] = {-1, -1};  // the SIGWINCH handler writes a byte to [1]

// Prints the terminal's size, waits (10 s at most) for SIGWINCH, prints it again. The handler is
// the process's, so the signal is caught whichever thread the kernel hands it to (libraries
// such as OpenBLAS start threads of their own), and it wakes the wait through a pipe.
int WindowChange() {
  if (::pipe2(window_changes, O_CLOEXEC | O_NONBLOCK) != 0) return 2;
  struct sigaction on_change {};
  on_change.sa_handler = [](int) {
    const char byte = 1;
    (void)!::write(window_changes[1], &byte, 1);
  };
  if (::sigaction(SIGWINCH, &on_change, nullptr) != 0) return 2;
  auto print_size = [] {
    winsize window{};
    ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &window);
    std::printf("size %dx%d\n", window.ws_row, window.ws_col);
    std::fflush(stdout);
  };
  print_size();
  pollfd changed{window_changes[0], POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&changed, 1, 10'000);
  } while (ready < 0 && errno == EINTR);
  print_size();
  return ready == 1 ? 0 : 1;
}

int KilledWithSharedMemory() {
  const std::string name = ddprun::NewRankSharedMemoryName("left-by-a-killed-rank");
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    std::printf("shm_open %s: %s\n", name.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("shm %s\n", name.c_str());
  ::raise(SIGKILL);
  return 1;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  // C stdio as the C library sets it up, for the modes that show what a terminal changes.
  if (mode == "terminal") return DescribeTerminal();
  if (mode == "stdio-lines" && argc > 2) return StdioLines(argv[2]);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (mode == "window-change") return WindowChange();
  if (mode == "killed-with-shm") return KilledWithSharedMemory();
  auto arg = [&](int i) { return argc > i ? std::atoi(argv[i]) : 0; };
  if (mode == "env") return PrintEnvironment();
  if (mode == "args") {
    for (int i = 2; i < argc; ++i) std::printf("arg[%d]=%s\n", i - 2, argv[i]);
    return 0;
  }
  if (mode == "chatty") return Chatty(arg(2));
  if (mode == "partial") {
    Write(STDOUT_FILENO, "no newline at the end");
    return 0;
  }
  if (mode == "fail-once") return FailOnce(arg(2));
  if (mode == "exit") return Rank() == arg(2) ? arg(3) : 0;
  if (mode == "kill-self") {
    if (Rank() == arg(2)) {
      ::signal(arg(3), SIG_DFL);  // sanitizers install their own SIGSEGV handler
      ::raise(arg(3));
    }
    return 0;
  }
  if (mode == "error-file") {
    if (Rank() != arg(2)) return 0;
    std::ofstream(std::getenv("TORCHELASTIC_ERROR_FILE"))
        << R"({"message": {"message": "ValueError: the loss is NaN", "extraInfo": )"
        << R"({"py_callstack": "Traceback (most recent call last): ...", "timestamp": "0"}}})";
    return 1;
  }
  if (mode == "wait-for-signal") return WaitForSignal();
  if (mode == "ignore-term") return IgnoreTerm();
  if (mode == "rank0-exits") {
    if (Rank() != 0) return WaitForSignal();
    std::printf("ready %d\n", static_cast<int>(::getpid()));
    return 0;
  }
  if (mode == "until-world") return UntilWorld(arg(2));
  if (mode == "store") return ExerciseStore();
  if (mode == "touch" && argc > 2) {
    std::ofstream(argv[2]) << "started\n";
    return 0;
  }
  std::fprintf(stderr, "test_worker: unknown mode '%s'\n", mode.c_str());
  return 64;
}
