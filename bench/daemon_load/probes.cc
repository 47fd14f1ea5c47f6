// The probes; see probes.h.
#include "probes.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "held_resources.h"

namespace ddprun::daemon_load {

ProbeFigures RunProbes(const Options& options) {
  g_phase = kProbes;
  ProbeFigures f;
  f.rss_start = ReadRssKib(options.daemon_pid);
  Event("probe_jobs");
  // Jobs, 100 at a time: each a forming job (min 2) whose one node's stream is then cancelled;
  // the streams' memory is reused batch after batch, the jobs stay (until join_timeout).
  f.rss_before_jobs = ReadRssKib(options.daemon_pid);
  for (int first = 0; first < options.probe_jobs; first += 100) {
    HeldSessions batch;
    std::vector<v1::AgentMessage> joins;
    for (int i = first; i < std::min(options.probe_jobs, first + 100); ++i) {
      joins.emplace_back();
      SetJoin(joins.back(), "probe-job-" + std::to_string(i), 2, 2, "n", 600'000, 600'000);
    }
    f.probe_written += batch.Open(options, "probe-", std::move(joins));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the joins are processed
    std::string ignored;
    batch.Close(ignored);
  }
  f.probe_jobs_seen = CountJobs(options, "", nullptr);
  f.rss_jobs = SettledRss(options, 2500);  // their nodes are lost after 1 s

  Event("probe_resume");
  f.rss_before_resume = ReadRssKib(options.daemon_pid);
  HeldSessions resume;
  std::vector<v1::AgentMessage> resume_join(1);
  SetJoin(resume_join[0], "probe-resume", 1, kInt32Max, "n", 600'000, 2000);
  auto* running = resume_join[0].mutable_join()->mutable_running();
  running->set_round(7);
  running->set_group_rank(0);
  running->set_group_world_size(options.resume_world);
  resume.Open(options, "resume-", std::move(resume_join));
  f.rss_resume = SettledRss(options);
  std::string resume_example;
  resume.Close(resume_example);
  f.rss_resume_after = SettledRss(options, 4000);  // past the readopt deadline (2 s)

  Event("probe_crowd");
  f.rss_before_crowd = ReadRssKib(options.daemon_pid);
  HeldSessions probe_crowd;
  f.crowd_written = probe_crowd.Open(options, "crowd-", CrowdJoins(options, "crowd"));
  CountJobs(options, "crowd", &f.crowd_nodes);
  f.rss_after_crowd = SettledRss(options);
  f.probe_crowd_ready = probe_crowd.Ready();

  Event("probe_waits");
  HeldWaits probe_waits;
  probe_waits.Open(options, options.held_waits, options.held_wait_keys);
  f.rss_after_waits = SettledRss(options, 3000);

  f.probe_crowd_other = probe_crowd.Close(f.probe_crowd_example);
  probe_waits.Close();
  f.rss_probes_closed = SettledRss(options, 2500);  // the crowd's nodes are lost
  return f;
}

}  // namespace ddprun::daemon_load
