// What every client class of the load generator shares: the run's phase, the report's event
// lines, the daemon's memory, channels and calls with their deadline and token, pacing, joins,
// and session streams held synchronously.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ddprun/v1/rendezvous.grpc.pb.h"
#include "load_options.h"

namespace ddprun::daemon_load {

namespace v1 = ddprun::v1;
using Clock = std::chrono::steady_clock;
constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The run's phase; every client loop reads it to know when to end.
enum Phase : int { kBaseline = 0, kMix = 1, kMixOver = 2, kProbes = 3 };
inline std::atomic<int> g_phase{kProbes};

// "@event NAME" on stdout, flushed: a mark for bench/daemon_load.py.
void Event(const std::string& name);

// gRPC's codes are the project's (ddprun/base/status.h maps them one to one).
const char* CodeName(grpc::StatusCode code);

double MsSince(Clock::time_point start);

// VmRSS of `pid` in KiB; -1 when pid <= 0 or unreadable.
long ReadRssKib(int pid);

// True for pid <= 0 (no daemon to watch).
bool DaemonAlive(int pid);

// A channel of its own connection (`tag` keeps gRPC from sharing one).
std::shared_ptr<grpc::Channel> NewChannel(const Options& options, const std::string& tag);

enum class Token { kGood, kNone, kWrong };

// A deadline `deadline_s` from now and the token (the daemon's, none or a wrong one).
void Prepare(grpc::ClientContext& context, const Options& options, double deadline_s,
             Token token = Token::kGood);

// Sleeps to hold `rate` calls per second (0: no pacing); never accumulates a backlog.
class Pacer {
 public:
  explicit Pacer(double rate) : period_(rate > 0 ? 1.0 / rate : 0), next_(Clock::now()) {}
  void Wait() {
    if (period_ <= 0) return;
    next_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_));
    const auto now = Clock::now();
    if (next_ < now) {
      next_ = now;
      return;
    }
    std::this_thread::sleep_until(next_);
  }

 private:
  double period_;
  Clock::time_point next_;
};

void SetJoin(v1::AgentMessage& message, const std::string& job_id, int min_nodes, int max_nodes,
             const std::string& node_id, int64_t join_timeout_ms, int64_t heartbeat_timeout_ms);

using SessionStream = grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerEvent>;

struct SyncNode {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream;
};

// Cancels (when `cancel`) and drains every stream (Finish only after Read has returned false).
void EndNodes(std::vector<std::unique_ptr<SyncNode>>& nodes, bool cancel);

// An asynchronous Wait's call, kept alive while it is pending.
struct PendingWait {
  grpc::ClientContext context;
  v1::WaitRequest request;
  v1::WaitResponse response;
};

}  // namespace ddprun::daemon_load
