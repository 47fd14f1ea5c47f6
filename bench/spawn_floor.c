/* spawn-floor: the machine's floor for what ddprun does when it launches and restarts a group,
 * with nothing else: a small C program that forks and execs the workers, each in its own process
 * group with RANK, LOCAL_RANK and WORLD_SIZE set, and waits for them.
 *
 *   spawn-floor launch N PROGRAM [ARG...]    start N workers, wait for all; exit 0 if all did
 *   spawn-floor restart N PROGRAM [ARG...]   the same, and when a worker fails: SIGTERM to the
 *                                            groups of those still running, wait for them,
 *                                            start N again once
 *
 * The benchmarks (bench/launch_overhead.py, bench/restart_latency.py, bench/speed_guard.py) run
 * it beside ddprun, in the same run, and print ddprun's time as a ratio of its time. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kMaxWorkers = 4096 };

static pid_t workers[kMaxWorkers];

static void start_group(int count, char** argv) {
  char world[16];
  snprintf(world, sizeof(world), "%d", count);
  for (int rank = 0; rank < count; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      perror("spawn-floor: fork");
      exit(1);
    }
    if (pid == 0) {
      char number[16];
      snprintf(number, sizeof(number), "%d", rank);
      setpgid(0, 0);
      setenv("RANK", number, 1);
      setenv("LOCAL_RANK", number, 1);
      setenv("WORLD_SIZE", world, 1);
      execv(argv[0], argv);
      _exit(127);
    }
    workers[rank] = pid;
  }
}

/* Waits for every worker; returns whether each exited 0. */
static int wait_all(int count) {
  int all_succeeded = 1;
  for (int rank = 0; rank < count; ++rank) {
    int status;
    if (waitpid(workers[rank], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      all_succeeded = 0;
    }
  }
  return all_succeeded;
}

int main(int argc, char** argv) {
  if (argc < 4 || (strcmp(argv[1], "launch") != 0 && strcmp(argv[1], "restart") != 0)) {
    fprintf(stderr, "usage: spawn-floor launch|restart N PROGRAM [ARG...]\n");
    return 2;
  }
  const int count = atoi(argv[2]);
  if (count < 1 || count > kMaxWorkers) {
    fprintf(stderr, "spawn-floor: N must be 1 to %d\n", kMaxWorkers);
    return 2;
  }
  char** program = argv + 3;
  start_group(count, program);
  if (strcmp(argv[1], "launch") == 0) return wait_all(count) ? 0 : 1;

  /* A failure restarts the group once; a worker that succeeds first is waited for, as ddprun
   * does (under load a worker of restart_probe.sh may start after rank 1 failed, see the
   * failure, and succeed before rank 1 is reaped: ending the group then left one restart). */
  int ended = 0;
  int failed = 0;
  while (ended < count && !failed) {
    int status;
    const pid_t pid = wait(&status);
    if (pid < 0) return 1;
    for (int rank = 0; rank < count; ++rank) {
      if (workers[rank] == pid) workers[rank] = 0;
    }
    ++ended;
    failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  if (!failed) return 0;
  for (int rank = 0; rank < count; ++rank) {
    if (workers[rank] == 0) continue;
    kill(-workers[rank], SIGTERM);
    waitpid(workers[rank], NULL, 0);
  }
  start_group(count, program);
  return wait_all(count) ? 0 : 1;
}
