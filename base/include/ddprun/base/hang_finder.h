// Finding a hang in a job's progress, and naming the ranks behind it. Pure: the agent (one node)
// and the rendezvous server (many) feed it what they know of every rank and act on the finding.
//
// A rank is stalled when it has made no progress for hang_timeout (hang_first_timeout before its
// first progress). Which ranks a hang names:
// - Some ranks still progress: the stalled ones that are not inside a collective (they stopped
//   while others went on). A rank stalled inside a collective waits for another; while some
//   rank still moves that is no hang yet (the one it waits for is found once it stalls too:
//   agents' reports reach the server out of step, so ranks cross the timeout at different
//   moments).
// - Every rank is stalled (the usual picture: the others wait in their next collective for the
//   one that stopped): the ranks behind the others (the lowest step, then the fewest collectives
//   started); where all are level, the ranks that are not inside a collective (the others wait
//   in one for them); where all are inside one, every rank (the collective itself is stuck).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ddprun {

struct HangSettings {
  std::chrono::milliseconds timeout{0};        // 0: hang detection is off
  std::chrono::milliseconds first_timeout{0};  // for the first progress; 0: the default
  enum class Action {
    kRestart,  // collect stacks, stop the group, restart within --max_restarts
    kStacks,   // collect and report the stacks; the job runs on
    kFail,     // collect stacks, stop, and fail the job without a restart
  };
  Action action = Action::kRestart;
  bool output_is_progress = false;  // --hang_progress=output: any output is a heartbeat
  // Straggler detection rides on the same sampling of progress (straggler_watch.h):
  // --straggler_ratio, 0 when off. A job with a hang timeout has it at 1.5 unless told.
  double straggler_ratio = 0;

  bool enabled() const { return timeout.count() > 0; }
  bool watches_stragglers() const { return straggler_ratio > 0; }
  // Whether the agents sample their workers' progress at all: for either watch.
  bool samples_progress() const { return enabled() || watches_stragglers(); }
  // first_timeout, or its default: max(timeout, 5 min) (start-up and loading data are slow).
  std::chrono::milliseconds EffectiveFirstTimeout() const;
  // How often progress is sampled (agents) and searched (the server): timeout / 8, from 50 to
  // 500 ms; 250 ms without a timeout. A hang is found within the timeout plus about this.
  std::chrono::milliseconds SamplingPeriod() const;
};

// "restart", "stacks" or "fail".
const char* HangActionName(HangSettings::Action action);
std::optional<HangSettings::Action> ParseHangAction(const std::string& text);

// What is known of one rank's progress when it is sampled.
struct RankProgress {
  int global_rank = 0;
  int local_rank = 0;
  std::string host;
  int64_t step = -1;                  // the last step it reported; -1: none
  uint64_t collectives = 0;           // collectives it started
  bool in_collective = false;         // one it started has not finished
  bool progressed = false;            // it has made progress since it started
  std::chrono::milliseconds idle{0};  // since its last progress (since it started, if none)
  // What a step costs it (step_timer.h); 0 until it has taken StepTimer::kWindowSteps steps.
  std::chrono::microseconds step_time{0};
  bool straggler = false;  // in a status snapshot: the job names it a straggler
  bool hung = false;       // in a status snapshot: the job's latest hang search names it
  // It is done with collectives (progress_page.h's finished_ns): no hang can hold it or be
  // held by it, so the hang search leaves it out.
  bool finished = false;
};

struct HangFinding {
  std::vector<RankProgress> hung;  // the ranks named, by global rank
  // One line, e.g. "hang: ranks 5 (h1, local 1) and 7 (h1, local 3) at step 1579 for 60 s; the
  // other 14 ranks at step 1580".
  std::string description;
};

// A hang among `ranks` (every running rank of the job; the finished ones are passed over), or
// nullopt.
std::optional<HangFinding> FindHang(const std::vector<RankProgress>& ranks,
                                    const HangSettings& settings);

// What one hung rank was doing, for its failure record: "no progress for 3.0 s at step 5".
std::string DescribeStall(const RankProgress& rank);

// Says each hang once: a finding whose ranks were all named before, and have not progressed
// since, is not news. A rank that progresses again can be named again.
class HangLatch {
 public:
  // Whether `finding` is news; remembers its ranks and how long they have been idle.
  bool Admit(const HangFinding& finding);
  // Forgets every rank (a new round).
  void Reset() { named_.clear(); }

 private:
  struct Named {
    int global_rank;
    std::chrono::milliseconds idle;  // at the last finding that named it
    bool operator<(const Named& other) const { return global_rank < other.global_rank; }
  };
  std::set<Named> named_;
};

}  // namespace ddprun
