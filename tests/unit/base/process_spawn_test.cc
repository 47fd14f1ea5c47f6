// SpawnWorker and WorkerSpawner start real processes: each worker in its own process group,
// with a parent-death signal, an empty signal mask and default dispositions, none of the agent's
// descriptors but the one it is given, in the job's cgroup where one is given; many at once;
// every failure reported with the program and the reason, leaving no process behind.
#include "ddprun/base/process_spawn.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ddprun/agent/job_cgroup.h"
#include "ddprun/base/environment_map.h"
#include "support/child_process.h"
#include "support/skip.h"

using namespace ddprun;
using namespace ddprun::testing;

#if defined(__SANITIZE_THREAD__)
#define DDPRUN_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DDPRUN_UNDER_TSAN 1
#endif
#endif

namespace {

struct Finished {
  int wait_status = -1;
  std::string out;
};

// Reads the worker's stdout to its end and reaps it, each wait bounded by 10 s.
Finished FinishWorker(const SpawnedWorker& worker) {
  Finished finished;
  char buffer[4096];
  pollfd readable{worker.stdout_fd, POLLIN, 0};
  while (::poll(&readable, 1, 10'000) == 1) {
    const ssize_t n = ::read(worker.stdout_fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    finished.out.append(buffer, static_cast<size_t>(n));
  }
  if (worker.pidfd >= 0) {
    pollfd exited{worker.pidfd, POLLIN, 0};
    REQUIRE(::poll(&exited, 1, 10'000) == 1);
  }
  REQUIRE(::waitpid(worker.pid, &finished.wait_status, 0) == worker.pid);
  for (int fd : {worker.stdout_fd, worker.stderr_fd, worker.stdin_fd, worker.pidfd}) {
    if (fd >= 0) ::close(fd);
  }
  return finished;
}

Finished RunWorker(const std::vector<std::string>& argv, const SpawnOptions& options = {}) {
  auto worker = SpawnWorker(argv, ToEnvp(CurrentEnvironment()), options);
  REQUIRE(worker.ok());
  return FinishWorker(worker.value());
}

// A line of /proc/self/status as the worker sees it ("SigBlk:\t0000000000000000").
std::string StatusLine(const std::string& out, const std::string& field) {
  for (const std::string& line : Lines(out)) {
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  }
  return "";
}

bool ChildExists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// Makes clone3 fail with ENOSYS in this process from now on, as a container's seccomp filter
// or systemd's RestrictNamespaces= does. Whether it could.
bool HideClone3() {
  sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog filter{static_cast<unsigned short>(sizeof(program) / sizeof(program[0])), program};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

}  // namespace

TEST_CASE("a worker runs in a process group of its own with an empty mask and no ignored signal") {
  // The agent ignores SIGPIPE and blocks SIGUSR1 here: neither may reach the worker.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction saved {};
  ::sigaction(SIGPIPE, &ignore, &saved);
  sigset_t usr1, saved_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &usr1, &saved_mask);
  const Finished finished = RunWorker({"/bin/cat", "/proc/self/status", "/proc/self/stat"});
  ::pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  ::sigaction(SIGPIPE, &saved, nullptr);

  CHECK(WIFEXITED(finished.wait_status));
  CHECK(StatusLine(finished.out, "SigBlk").find_first_not_of("\t0") == std::string::npos);
  CHECK(StatusLine(finished.out, "SigIgn").find_first_not_of("\t0") == std::string::npos);
  // /proc/self/stat: "pid (comm) state ppid pgrp ...": the worker leads its own group.
  const std::string stat = Lines(finished.out).back();
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string state, ppid, pgrp;
  fields >> state >> ppid >> pgrp;
  const std::string pid = stat.substr(0, stat.find(' '));
  CHECK(pgrp == pid);
  CHECK(ppid == std::to_string(::getpid()));
}

TEST_CASE("a worker inherits none of the agent's descriptors but the one it is given") {
  // Every descriptor of the agent's own is close-on-exec; one of them is passed on, by number.
  const int kept = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Far above what ls opens itself, so that its own descriptor cannot take the number.
  const int agents_own = ::fcntl(kept, F_DUPFD_CLOEXEC, 100);
  REQUIRE(kept >= 3);
  SpawnOptions options;
  options.inherited_fd = kept;
  const Finished finished = RunWorker({"/bin/ls", "/proc/self/fd"}, options);
  ::close(kept);
  ::close(agents_own);
  std::vector<std::string> fds = Lines(finished.out);
  CHECK(std::find(fds.begin(), fds.end(), std::to_string(kept)) != fds.end());
  CHECK(std::find(fds.begin(), fds.end(), std::to_string(agents_own)) == fds.end());
  for (const char* standard : {"0", "1", "2"}) {
    CHECK(std::find(fds.begin(), fds.end(), standard) != fds.end());
  }
}

TEST_CASE(
    "a program that cannot be executed is reported with its name and reason and leaves no "
    "process") {
  ScratchDir dir;
  const std::string not_executable = dir / "script";
  std::ofstream(not_executable) << "#!/bin/sh\n";
  for (const auto& [argv0, reason] : std::vector<std::pair<std::string, std::string>>{
           {"/nonexistent/train", "No such file or directory"},
           {not_executable, "Permission denied"}}) {
    auto worker = SpawnWorker({argv0}, ToEnvp(CurrentEnvironment()));
    REQUIRE_FALSE(worker.ok());
    CHECK(worker.status().message() == "exec " + argv0 + ": " + reason);
  }
  // Reaped at once: this process has no child left (no zombie either).
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
}

TEST_CASE("a working directory that does not exist is reported and the worker does not run") {
  SpawnOptions options;
  options.working_dir = "/nonexistent/directory";
  auto worker = SpawnWorker({"/bin/true"}, ToEnvp(CurrentEnvironment()), options);
  REQUIRE_FALSE(worker.ok());
  CHECK(worker.status().message() ==
        "entering the working directory /nonexistent/directory for /bin/true: No such file or "
        "directory");
}

TEST_CASE("a worker dies with SIGKILL when the thread that started it ends") {
  pid_t pid = -1;
  int pidfd = -1;
  std::thread starter([&] {
    auto worker = SpawnWorker({"/bin/sleep", "60"}, ToEnvp(CurrentEnvironment()));
    REQUIRE(worker.ok());
    pid = worker->pid;
    pidfd = worker->pidfd;
    for (int fd : {worker->stdout_fd, worker->stderr_fd}) ::close(fd);
  });
  starter.join();
  REQUIRE(pidfd >= 0);
  pollfd exited{pidfd, POLLIN, 0};
  CHECK(::poll(&exited, 1, 10'000) == 1);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  ::close(pidfd);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}

TEST_CASE(
    "many workers started at once all run with their own arguments and one failing fails alone") {
  constexpr int kWorkers = 48;
  WorkerSpawner spawner;
  for (int i = 0; i < kWorkers; ++i) {
    const std::string program = i == 7 ? "/nonexistent/program" : "/bin/sh";
    spawner.Add({{program, "-c", "echo $0; exit $0", std::to_string(i % 5)},
                 ToEnvp(CurrentEnvironment()),
                 {}});
  }
  std::vector<Result<SpawnedWorker>> workers = spawner.Finish();
  REQUIRE(workers.size() == kWorkers);
  for (int i = 0; i < kWorkers; ++i) {
    INFO("worker " << i);
    if (i == 7) {
      CHECK_FALSE(workers[i].ok());
      continue;
    }
    REQUIRE(workers[i].ok());
    const Finished finished = FinishWorker(workers[i].value());
    CHECK(finished.out == std::to_string(i % 5) + "\n");
    CHECK(WEXITSTATUS(finished.wait_status) == i % 5);
  }
}

TEST_CASE("a worker given the job's cgroup starts in it") {
  auto cgroup = JobCgroup::Create();
  if (!cgroup.ok()) {
    return SkipTest("no cgroup for jobs here: " + cgroup.status().message());
  }
  SpawnOptions options;
  options.cgroup_fd = cgroup.value()->dir_fd();
  const Finished finished = RunWorker({"/bin/cat", "/proc/self/cgroup"}, options);
  const std::string own = cgroup.value()->path();
  const std::string relative = own.substr(own.find("/ddprun-"));
  CHECK(finished.out.find("0::") != std::string::npos);
  CHECK(finished.out.find(relative + "\n") != std::string::npos);
  const std::string path = own;
  const pid_t guardian = cgroup.value()->own_children().front();
  cgroup.value().reset();  // its guardian removes it, and is reaped
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(ChildExists(guardian));
}

TEST_CASE("without clone3 workers are still started, one after another, and no cgroup is made") {
#if defined(DDPRUN_UNDER_TSAN)
  return SkipTest(
      "ThreadSanitizer's interceptor of glibc's clone() cannot run a child that shares memory "
      "(CLONE_VM), which this fallback uses");
#endif
  // In a child process of the test's, whose seccomp filter hides clone3; it exits 0 when every
  // expectation held, else with the number of the first that did not.
  const pid_t tester = ::fork();
  REQUIRE(tester >= 0);
  if (tester == 0) {
    if (!HideClone3()) ::_exit(10);
    WorkerSpawner spawner;
    for (int code : {3, 4}) {
      spawner.Add(
          {{"/bin/sh", "-c", "exit " + std::to_string(code)}, ToEnvp(CurrentEnvironment()), {}});
    }
    std::vector<Result<SpawnedWorker>> workers = spawner.Finish();
    for (size_t i = 0; i < workers.size(); ++i) {
      if (!workers[i].ok()) ::_exit(11);
      int status = 0;
      if (::waitpid(workers[i]->pid, &status, 0) != workers[i]->pid) ::_exit(12);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != static_cast<int>(3 + i)) ::_exit(13);
    }
    auto missing = SpawnWorker({"/nonexistent/program"}, ToEnvp(CurrentEnvironment()));
    if (missing.ok() ||
        missing.status().message() != "exec /nonexistent/program: No such file or directory") {
      ::_exit(14);
    }
    auto cgroup = JobCgroup::Create();
    if (cgroup.ok() || (cgroup.status().message().find("CLONE_INTO_CGROUP") == std::string::npos &&
                        cgroup.status().message().find("cgroup v2") == std::string::npos &&
                        cgroup.status().message().find("cannot create") == std::string::npos)) {
      ::_exit(15);
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(tester, &status, 0) == tester);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 10) return SkipTest("no seccomp filter can be installed here");
  CHECK(WEXITSTATUS(status) == 0);
}

namespace {

// A WorkerForker that takes every worker and then answers `answer` for each (a forker that died
// after taking them, or refused them).
class AnsweringForker : public WorkerForker {
 public:
  AnsweringForker(Status send, Status answer)
      : send_(std::move(send)), answer_(std::move(answer)) {}
  Status Send(const ForkedStart& start) override {
    asked.push_back(start.argv);
    return send_;
  }
  Result<pid_t> Collect() override { return answer_; }
  std::vector<std::vector<std::string>> asked;

 private:
  Status send_;
  Status answer_;
};

}  // namespace

TEST_CASE("a worker whose forker is gone or refuses it is started by exec") {
  AnsweringForker gone(Status::Ok(), UnavailableError("the preloading interpreter is gone"));
  AnsweringForker refusing(UnavailableError("not serving"), Status::Ok());
  for (AnsweringForker* forker : {&gone, &refusing}) {
    WorkerSpawner spawner;
    for (int code : {3, 4}) {
      SpawnRequest request{
          {"/bin/sh", "-c", "exit " + std::to_string(code)}, ToEnvp(CurrentEnvironment()), {}};
      request.forker = forker;
      spawner.Add(std::move(request));
    }
    std::vector<Result<SpawnedWorker>> workers = spawner.Finish();
    REQUIRE(workers.size() == 2);
    CHECK(forker->asked.size() == 2);
    for (size_t i = 0; i < workers.size(); ++i) {
      REQUIRE(workers[i].ok());
      const Finished finished = FinishWorker(workers[i].value());
      CHECK(WIFEXITED(finished.wait_status));
      CHECK(WEXITSTATUS(finished.wait_status) == static_cast<int>(3 + i));
    }
  }
}

TEST_CASE("a worker its forker could not set up is reported with the program, and not exec'd") {
  AnsweringForker failing(Status::Ok(), ErrnoError("entering its working directory", ENOENT));
  WorkerSpawner spawner;
  SpawnRequest request{{"/bin/true"}, ToEnvp(CurrentEnvironment()), {}};
  request.forker = &failing;
  spawner.Add(std::move(request));
  std::vector<Result<SpawnedWorker>> workers = spawner.Finish();
  REQUIRE(workers.size() == 1);
  REQUIRE_FALSE(workers[0].ok());
  CHECK(workers[0].status().message() ==
        "starting worker /bin/true (entering its working directory: No such file or directory)");
}
