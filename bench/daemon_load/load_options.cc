// The load generator's flags and their parsing; see load_options.h.
#include "load_options.h"

#include <cstdio>
#include <vector>

#include "ddprun/base/flag_parser.h"
#include "ddprun/base/security_files.h"

namespace ddprun::daemon_load {
namespace {

// One row per option; `token_file` is read after parsing.
std::vector<FlagSpec> LoadFlags(Options& o, std::string& token_file) {
  auto row = [](std::string_view name, auto* target, std::string_view help) {
    return FlagSpec{
        .name = name, .pet = false, .help = help, .target = target, .show_default = true};
  };
  return {
      row("--target", &o.target, "The daemon's HOST:PORT"),
      row("--token_file", &token_file, "The file holding the daemon's token"),
      row("--token", &o.token, "The token itself (the vanish class's children get it so)"),
      row("--daemon_pid", &o.daemon_pid, "The daemon whose VmRSS the probes read; 0: no probes"),
      row("--baseline_s", &o.baseline_s, "Seconds of good clients only"),
      row("--mix_s", &o.mix_s, "Seconds of good clients beside every bad and vanishing class"),
      row("--agent_threads", &o.agent_threads, "Good jobs in flight at once, 2-4 nodes each"),
      row("--store_clients", &o.store_clients, "Good store clients, a channel and thread each"),
      row("--store_rate", &o.store_rate, "Calls per second of each good store client; 0: no cap"),
      row("--bad_threads", &o.bad_threads, "Threads per bad kind"),
      row("--bad_rate", &o.bad_rate, "Calls per second of each bad thread"),
      row("--fill_jobs", &o.fill_jobs, "Jobs filled to their store's 64 MiB"),
      row("--crowd", &o.crowd, "Session streams joining one job"),
      row("--held_waits", &o.held_waits, "Pending waits held through the mix"),
      row("--held_wait_keys", &o.held_wait_keys, "Keys each held wait names (64 bytes each)"),
      row("--cancel_threads", &o.cancel_threads, "Threads opening and cancelling calls"),
      row("--vanish_rate", &o.vanish_rate, "Child processes per second that join and _exit"),
      row("--vanish_sessions", &o.vanish_sessions, "Sessions and waits per child"),
      row("--probe_jobs", &o.probe_jobs, "Jobs made and abandoned by the job probe"),
      row("--resume_world", &o.resume_world, "group_world_size of the adopted-round probe"),
      {.name = "--child", .pet = false, .help = {}, .target = &o.child},
      {.name = "--child_id", .pet = false, .help = {}, .target = &o.child_id},
  };
}

}  // namespace

LoadCommandLine ParseLoadCommandLine(int argc, char** argv) {
  LoadCommandLine parsed;
  std::string token_file;
  const FlagParser parser(CommandSpec{
      .synopsis = "daemon_load --target=HOST:PORT [OPTIONS]",
      .description = "The load generator of bench/daemon_load.py: good, bad and vanishing "
                     "clients of one rendezvous daemon.",
      .flags = LoadFlags(parsed.options, token_file)});
  auto line = parser.Parse(std::vector<std::string>(argv + 1, argv + argc));
  if (!line.ok()) {
    std::fprintf(stderr, "daemon_load: %s (see daemon_load --help)\n",
                 line.status().message().c_str());
    parsed.exit_code = 2;
    return parsed;
  }
  if (line->help) {
    std::printf("%s", parser.Help().c_str());
    parsed.exit_code = 0;
    return parsed;
  }
  if (!token_file.empty()) {
    auto token = ReadTokenFile(token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "daemon_load: %s\n", token.status().message().c_str());
      parsed.exit_code = 2;
      return parsed;
    }
    parsed.options.token = std::move(token).value();
  }
  return parsed;
}

}  // namespace ddprun::daemon_load
