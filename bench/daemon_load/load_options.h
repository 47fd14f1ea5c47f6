// The load generator's options (bench/daemon_load.py passes them) and its command line, parsed
// with CLI11 from flag rows (ddprun/base/flag_spec.h) as ddprun's and ddprund's are.
#pragma once

#include <optional>
#include <string>

namespace ddprun::daemon_load {

struct Options {
  std::string target = "127.0.0.1:29400";
  std::string token;
  int daemon_pid = 0;  // whose VmRSS the probes read; 0: no probes
  double baseline_s = 10;
  double mix_s = 60;
  int agent_threads = 200;       // jobs in flight at once, each of 2-4 nodes
  int store_clients = 64;        // good store clients, one channel and thread each
  double store_rate = 50;        // ops/s per good store client; 0: as fast as it can
  int bad_threads = 1;           // threads per bad kind
  double bad_rate = 20;          // calls/s per bad thread
  int fill_jobs = 3;             // jobs filled to their 64 MiB store total
  int crowd = 5000;              // session streams joining one job
  int held_waits = 500;          // pending waits held through the mix
  int held_wait_keys = 1024;     // keys named by each held wait (64 bytes each)
  int cancel_threads = 2;        // threads opening and cancelling sessions and waits
  double vanish_rate = 10;       // child processes per second that join and _exit
  int vanish_sessions = 20;      // sessions (and waits) per child
  int probe_jobs = 2000;         // jobs made and abandoned in the job probe
  int resume_world = 1'000'000;  // group_world_size of the adopted-round probe
  // Child mode (spawned by the vanish class): join, wait, then _exit without closing anything.
  bool child = false;
  std::string child_id;
};

struct LoadCommandLine {
  Options options;
  // Set: end now with this code (0 after --help, which printed it; 2 after a usage error, whose
  // one line went to stderr).
  std::optional<int> exit_code;
};

// `argv` as main has it. --token_file is read here; an unreadable one is a usage error.
LoadCommandLine ParseLoadCommandLine(int argc, char** argv);

}  // namespace ddprun::daemon_load
