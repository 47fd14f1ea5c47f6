// daemon_load: the load generator of bench/daemon_load.py. Drives one rendezvous daemon with
// well-behaved jobs and store clients while bad, malformed and vanishing clients run beside
// them, and says whether the good ones kept being served.
//
//   daemon_load --target=127.0.0.1:PORT --token_file=PATH --daemon_pid=PID [--mix_s=60] ...
//
// Phases: probes on the fresh daemon (probes.h), one resource at a time, that measure its
// resident memory per abandoned job, per adopted round slot, per held stream and per pending
// wait; a baseline (good agents and store clients only); the mix (the same good clients plus
// every bad and vanishing class; load_run.h). Lines "@event NAME" mark the phases for the
// driver; the rest is the report (report.h). Every call carries a deadline and every loop ends
// with its phase, so the program ends by itself; a watchdog ends it if anything hangs. Exits 0
// when it ran to the end (whatever it found), 1 when it could not, 2 on a usage error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "load_basics.h"
#include "load_options.h"
#include "load_run.h"
#include "probes.h"
#include "report.h"
#include "vanishing_clients.h"

namespace {

std::string ThisProgram() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

// A hang anywhere must not outlive the run's budget.
void StartWatchdog(double budget_s) {
  std::thread([budget_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(budget_s));
    std::fprintf(stderr, "daemon_load: still running after %.0f s; giving up\n", budget_s);
    std::fflush(stdout);
    _exit(1);
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ddprun::daemon_load;
  const LoadCommandLine command_line = ParseLoadCommandLine(argc, argv);
  if (command_line.exit_code) return *command_line.exit_code;
  const Options& options = command_line.options;
  if (options.child) return VanishChild(options);
  StartWatchdog(options.baseline_s + options.mix_s + 240);

  const ProbeFigures probes = RunProbes(options);
  Clients clients;
  const LoadFigures load = RunLoad(options, ThisProgram(), clients);
  PrintReport(options, probes, clients, load);
  std::fflush(stdout);
  Event("done");
  return load.alive ? 0 : 1;
}
