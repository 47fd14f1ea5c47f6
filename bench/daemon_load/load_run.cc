// The load; see load_run.h.
#include "load_run.h"

#include <thread>
#include <vector>

#include "held_resources.h"
#include "load_basics.h"
#include "vanishing_clients.h"

namespace ddprun::daemon_load {

LoadFigures RunLoad(const Options& options, const std::string& self, Clients& clients) {
  LoadFigures f;
  g_phase = kBaseline;
  Event("baseline_start");
  std::vector<std::thread> good;
  for (int i = 0; i < options.agent_threads; ++i) {
    good.emplace_back(GoodAgentLoop, std::cref(options), i, std::ref(clients.agents));
  }
  for (int i = 0; i < options.store_clients; ++i) {
    good.emplace_back(GoodStoreLoop, std::cref(options), i, std::ref(clients.store));
  }
  for (int i = 0; i < 4; ++i) {
    good.emplace_back(GoodTimeoutLoop, std::cref(options), i, std::ref(clients.timeouts));
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(options.baseline_s));
  f.rss_baseline = ReadRssKib(options.daemon_pid);

  // The mix: the crowd (in a job of its own name) and the held waits again, held throughout,
  // and every bad and vanishing class.
  g_phase = kMix;
  Event("mix_start");
  const auto mix_start = Clock::now();
  HeldSessions crowd;
  crowd.Open(options, "crowd-mix-", CrowdJoins(options, "crowd-mix"));
  HeldWaits held_waits;
  held_waits.Open(options, options.held_waits, options.held_wait_keys);
  Event("mix_held_open");

  std::vector<std::thread> mix;
  for (int kind = 0; kind < kBadKinds; ++kind) {
    for (int t = 0; t < options.bad_threads; ++t) {
      mix.emplace_back(BadLoop, std::cref(options), kind, t, std::ref(clients.bad));
    }
  }
  for (int which = 0; which < kAbsurdVariants; ++which) {
    mix.emplace_back(AbsurdLoop, std::cref(options), which, std::ref(clients.bad),
                     std::ref(clients.absurd));
  }
  for (int t = 0; t < options.cancel_threads; ++t) {
    mix.emplace_back(CancelLoop, std::cref(options), t, std::ref(clients.cancelled));
  }
  mix.emplace_back(VanishLoop, std::cref(options), std::cref(self), std::ref(clients.vanished));
  std::this_thread::sleep_until(mix_start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(options.mix_s)));
  f.mix_s = std::chrono::duration<double>(Clock::now() - mix_start).count();
  f.crowd_ready = crowd.Ready();
  f.rss_mix_end = ReadRssKib(options.daemon_pid);
  g_phase = kMixOver;
  Event("mix_end");
  for (auto& thread : good) thread.join();
  for (auto& thread : mix) thread.join();

  f.crowd_other = crowd.Close(f.crowd_example);
  f.wait_endings = held_waits.Close();
  Event("clients_stopped");
  f.jobs_after_mix = CountJobs(options, "", &f.nodes_left);
  f.rss_after_clients = SettledRss(options, 3000);
  f.alive = DaemonAlive(options.daemon_pid);
  return f;
}

}  // namespace ddprun::daemon_load
