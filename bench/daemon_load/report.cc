// The report; see report.h.
#include "report.h"

#include <cstdio>

#include "load_basics.h"

namespace ddprun::daemon_load {

namespace {

void PrintGood(ClassStats& stats, double baseline_s, double mix_s) {
  std::printf("| %s | baseline | %ld | %.0f/s | %s |\n", stats.name().c_str(),
              stats.calls_in(kBaseline), stats.calls_in(kBaseline) / baseline_s,
              stats.Latency(kBaseline).c_str());
  std::printf("| %s | mix | %ld | %.0f/s | %s |\n", stats.name().c_str(), stats.calls_in(kMix),
              stats.calls_in(kMix) / mix_s, stats.Latency(kMix).c_str());
}

}  // namespace

void PrintReport(const Options& options, const ProbeFigures& probes, Clients& clients,
                 const LoadFigures& load) {
  auto mib = [](long kib) { return kib / 1024.0; };
  std::printf("\n## daemon_load: baseline %.0f s, mix %.1f s, daemon %s at the end\n\n",
              options.baseline_s, load.mix_s, load.alive ? "alive" : "GONE");
  std::printf("Good clients, baseline vs under the mix (latency p50 / p99 / max, ms):\n\n");
  std::printf("| class | phase | calls | rate | latency ms |\n| --- | --- | --- | --- | --- |\n");
  PrintGood(clients.agents.jobs, options.baseline_s, load.mix_s);
  PrintGood(clients.agents.rounds, options.baseline_s, load.mix_s);
  PrintGood(clients.store, options.baseline_s, load.mix_s);
  PrintGood(clients.timeouts, options.baseline_s, load.mix_s);
  std::printf("\nrounds formed %ld (nodes %ld); good job failures %ld; good store failures %ld\n",
              clients.agents.rounds_formed.load(), clients.agents.nodes.load(),
              clients.agents.jobs.unexpected(), clients.store.unexpected());

  std::printf(
      "\nEvery class (refused: by status code; unexpected: outcomes that should not "
      "happen):\n\n");
  std::printf("| class | calls | ok | refused | unexpected |\n| --- | --- | --- | --- | --- |\n");
  ClassStats* all[] = {&clients.agents.jobs,
                       &clients.store,
                       &clients.timeouts,
                       &clients.bad.value_store,
                       &clients.bad.value_transport,
                       &clients.bad.key_long,
                       &clients.bad.wait_keys,
                       &clients.bad.fill,
                       &clients.bad.garbage_set,
                       &clients.bad.garbage_session,
                       &clients.bad.raw_tcp,
                       &clients.bad.unauthenticated,
                       &clients.bad.absurd,
                       &clients.cancelled,
                       &clients.vanished};
  for (ClassStats* stats : all) stats->Print();
  std::printf("\nUnexpected outcomes, first of each class:\n");
  for (ClassStats* stats : all) stats->PrintExamples();
  std::printf("\nThe first message of each refusal:\n");
  for (ClassStats* stats : all) stats->PrintRefusals();

  std::printf("\nFill jobs: accepted bytes per job (limit %d):", 64 << 20);
  for (long bytes : clients.bad.fill_accepted_bytes) std::printf(" %ld", bytes);
  std::printf("\n\nAbsurd joins, what the daemon answered:\n");
  for (const auto& [variant, seen] : clients.absurd.seen) {
    for (const auto& [outcome, count] : seen) {
      std::printf("  %s -> %s (x%ld)\n", variant.c_str(), outcome.c_str(), count);
    }
  }

  std::printf("\nHeld resources and probes (daemon VmRSS, MiB):\n\n");
  std::printf(
      "| what | count | RSS before | RSS after | per item |\n| --- | --- | --- | --- | --- "
      "|\n");
  auto per = [](long before, long after, long count) {
    return count > 0 ? (after - before) * 1024.0 / static_cast<double>(count) : 0.0;
  };
  std::printf(
      "| jobs forming (min 2), each joined by one stream then abandoned (kept until "
      "join_timeout) | %d joined, %ld jobs listed | %.1f | %.1f | %.0f B/job |\n",
      probes.probe_written, probes.probe_jobs_seen, mib(probes.rss_before_jobs),
      mib(probes.rss_jobs), per(probes.rss_before_jobs, probes.rss_jobs, options.probe_jobs));
  std::printf(
      "| one join adopting a round of group_world_size=%d (max_nodes 2^31-1) | 1 | %.1f | "
      "%.1f | %.1f MiB; %.1f MiB still held 4 s after its stream ended |\n",
      options.resume_world, mib(probes.rss_before_resume), mib(probes.rss_resume),
      mib(probes.rss_resume - probes.rss_before_resume),
      mib(probes.rss_resume_after - probes.rss_before_resume));
  std::printf(
      "| streams joined to one job (min=max=2), held | %d written, %ld nodes in the job, %d "
      "RoundReady | %.1f | %.1f | %.0f B/stream |\n",
      probes.crowd_written, probes.crowd_nodes, probes.probe_crowd_ready,
      mib(probes.rss_before_crowd), mib(probes.rss_after_crowd),
      per(probes.rss_before_crowd, probes.rss_after_crowd, options.crowd));
  std::printf("| pending waits of %d keys (64 B each), held | %d | %.1f | %.1f | %.0f B/wait |\n",
              options.held_wait_keys, options.held_waits, mib(probes.rss_after_crowd),
              mib(probes.rss_after_waits),
              per(probes.rss_after_crowd, probes.rss_after_waits, options.held_waits));
  std::printf(
      "\nafter the probes' streams and waits ended: RSS %.1f MiB; their streams ending "
      "other than CANCELLED: %d %s\n",
      mib(probes.rss_probes_closed), probes.probe_crowd_other, probes.probe_crowd_example.c_str());
  std::printf(
      "in the mix: %d crowd streams held (%d RoundReady), %d ending other than CANCELLED "
      "%s\n",
      options.crowd, load.crowd_ready, load.crowd_other, load.crowd_example.c_str());
  std::printf("held waits' endings:");
  for (const auto& [code, count] : load.wait_endings) std::printf(" %s %d", code.c_str(), count);
  std::printf("\njobs the daemon holds after the mix: %ld (nodes %ld)\n", load.jobs_after_mix,
              load.nodes_left);
  std::printf(
      "daemon RSS MiB: start %.1f, probes over %.1f, baseline end %.1f, mix end %.1f, "
      "clients stopped %.1f\n",
      mib(probes.rss_start), mib(probes.rss_probes_closed), mib(load.rss_baseline),
      mib(load.rss_mix_end), mib(load.rss_after_clients));
}

}  // namespace ddprun::daemon_load
