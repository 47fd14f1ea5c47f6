// daemon_load: the load generator of bench/daemon_load.py. Drives one rendezvous daemon with
// well-behaved jobs and store clients while bad, malformed and vanishing clients run beside
// them, and says whether the good ones kept being served.
//
//   daemon_load --target=127.0.0.1:PORT --token_file=PATH --daemon_pid=PID [--mix_s=60] ...
//
// Phases: probes on the fresh daemon, one resource at a time, that measure its resident memory
// per abandoned job, per adopted round slot, per held stream and per pending wait; a baseline
// (good agents and store clients only); the mix (the same good clients plus every bad and
// vanishing class). Lines
// "@event NAME" mark the phases for the driver; the rest is the report. Every call carries a
// deadline and every loop ends with its phase, so the program ends by itself; a watchdog ends it
// if anything hangs. Exits 0 when it ran to the end (whatever it found), 1 when it could not.
#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ddprun/base/client_security.h"
#include "ddprun/base/status.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"

extern char** environ;

namespace {

namespace v1 = ddprun::v1;
using Clock = std::chrono::steady_clock;
constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

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

std::atomic<int> g_phase{0};  // 0 baseline, 1 mix, 2 mix over (loops end), 3 probes
constexpr int kBaseline = 0;
constexpr int kMix = 1;

void Event(const std::string& name) {
  std::printf("@event %s\n", name.c_str());
  std::fflush(stdout);
}

// gRPC's codes are the project's (ddprun/base/status.h maps them one to one).
const char* CodeName(grpc::StatusCode code) {
  return ddprun::StatusCodeName(static_cast<ddprun::StatusCode>(code));
}

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

long ReadRssKib(int pid) {
  if (pid <= 0) return -1;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

bool DaemonAlive(int pid) { return pid <= 0 || ::kill(pid, 0) == 0; }

// One class of client: its calls, how they ended, and (for the good ones) their latency by phase.
class ClassStats {
 public:
  explicit ClassStats(std::string name) : name_(std::move(name)) {}

  // `expected`: the outcome this class should get (OK for a good client, the refusal for a bad
  // one); anything else is a failure that should not happen.
  void Record(const grpc::Status& status, bool expected, double ms, int phase) {
    std::lock_guard lock(mu_);
    ++calls_[phase == kBaseline ? 0 : 1];
    if (status.ok()) {
      ++ok_;
    } else {
      if (++refused_[CodeName(status.error_code())] == 1) {
        first_message_[CodeName(status.error_code())] = status.error_message().substr(0, 140);
      }
    }
    if (!expected) {
      ++unexpected_;
      if (examples_.size() < 4) {
        examples_.push_back(std::string(CodeName(status.error_code())) + ": " +
                            status.error_message().substr(0, 160));
      }
    }
    if (phase == kBaseline || phase == kMix) latency_[phase].push_back(static_cast<float>(ms));
  }
  void Note(const std::string& example) {
    std::lock_guard lock(mu_);
    ++unexpected_;
    if (examples_.size() < 4) examples_.push_back(example);
  }

  const std::string& name() const { return name_; }
  long calls() {
    std::lock_guard lock(mu_);
    return calls_[0] + calls_[1];
  }
  long calls_in(int phase) {
    std::lock_guard lock(mu_);
    return calls_[phase == kBaseline ? 0 : 1];
  }
  long unexpected() {
    std::lock_guard lock(mu_);
    return unexpected_;
  }

  // "p50 / p99 / max" of the phase, in ms; "-" when it has no samples.
  std::string Latency(int phase) {
    std::lock_guard lock(mu_);
    std::vector<float> v = latency_[phase];
    if (v.empty()) return "-";
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
    };
    char text[96];
    std::snprintf(text, sizeof(text), "%.2f / %.2f / %.1f", at(0.5), at(0.99), v.back());
    return text;
  }

  void Print(int phase_filter = -1) {
    std::string refused;
    {
      std::lock_guard lock(mu_);
      for (const auto& [code, count] : refused_) {
        if (!refused.empty()) refused += ", ";
        refused += code + " " + std::to_string(count);
      }
    }
    const long calls = phase_filter < 0 ? this->calls() : calls_in(phase_filter);
    std::lock_guard lock(mu_);
    std::printf("| %s | %ld | %ld | %s | %ld |\n", name_.c_str(), calls, ok_,
                refused.empty() ? "-" : refused.c_str(), unexpected_);
  }
  void PrintExamples() {
    std::lock_guard lock(mu_);
    for (const auto& example : examples_) {
      std::printf("  %s: %s\n", name_.c_str(), example.c_str());
    }
  }
  void PrintRefusals() {
    std::lock_guard lock(mu_);
    for (const auto& [code, message] : first_message_) {
      std::printf("  %s: %s \"%s\"\n", name_.c_str(), code.c_str(), message.c_str());
    }
  }

 private:
  const std::string name_;
  std::mutex mu_;
  long calls_[2] = {0, 0};
  long ok_ = 0;
  long unexpected_ = 0;
  std::map<std::string, long> refused_;
  std::map<std::string, std::string> first_message_;  // by code
  std::vector<std::string> examples_;
  std::vector<float> latency_[2];
};

std::shared_ptr<grpc::Channel> NewChannel(const Options& options, const std::string& tag) {
  grpc::ChannelArguments arguments;
  arguments.SetString("ddprun.load.channel", tag);  // a distinct connection per channel
  arguments.SetMaxReceiveMessageSize(-1);           // DescribeJobs of thousands of jobs
  return grpc::CreateCustomChannel(options.target, grpc::InsecureChannelCredentials(), arguments);
}

enum class Token { kGood, kNone, kWrong };

void Prepare(grpc::ClientContext& context, const Options& options, double deadline_s,
             Token token = Token::kGood) {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(deadline_s * 1000)));
  if (token == Token::kGood && !options.token.empty())
    context.AddMetadata(ddprun::kTokenMetadataKey, options.token);
  if (token == Token::kWrong) context.AddMetadata(ddprun::kTokenMetadataKey, "not-the-token");
}

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
             const std::string& node_id, int64_t join_timeout_ms, int64_t heartbeat_timeout_ms) {
  auto* join = message.mutable_join();
  join->set_job_id(job_id);
  join->mutable_settings()->set_min_nodes(min_nodes);
  join->mutable_settings()->set_max_nodes(max_nodes);
  join->mutable_settings()->set_join_timeout_ms(join_timeout_ms);
  join->mutable_settings()->set_last_call_timeout_ms(1000);
  join->mutable_settings()->set_heartbeat_timeout_ms(heartbeat_timeout_ms);
  join->mutable_node()->set_node_id(node_id);
  join->mutable_node()->set_host("127.0.0.1");
  join->mutable_node()->set_nproc(1);
  join->mutable_node()->set_master_port(29500);
  join->mutable_node()->set_requested_group_rank(-1);
}

// ---- 1. Good agents: whole jobs, one after another, `agent_threads` at once. ----

struct AgentTotals {
  ClassStats jobs{"good agents: jobs (join, round, heartbeat, succeeded, complete)"};
  ClassStats rounds{"good agents: last join -> every RoundReady"};
  std::atomic<long> rounds_formed{0};
  std::atomic<long> nodes{0};
};

using SessionStream = grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerEvent>;

struct SyncNode {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream;
};

// Cancels and drains every stream (Finish only after Read has returned false).
void EndNodes(std::vector<std::unique_ptr<SyncNode>>& nodes, bool cancel) {
  for (auto& node : nodes) {
    if (!node->stream) continue;
    if (cancel) node->context.TryCancel();
  }
  for (auto& node : nodes) {
    if (!node->stream) continue;
    v1::ServerEvent ignored;
    while (node->stream->Read(&ignored)) {
    }
    node->stream->Finish();
    node->stream.reset();
  }
}

// One job of `n` nodes from join to JobComplete. Returns "" or what went wrong; `round_ms` is
// the time from the last join written to the last RoundReady read.
std::string RunGoodJob(v1::Rendezvous::Stub& stub, const Options& options, const std::string& job,
                       int n, double& round_ms, grpc::Status& failure) {
  std::vector<std::unique_ptr<SyncNode>> nodes;
  for (int i = 0; i < n; ++i) {
    auto node = std::make_unique<SyncNode>();
    Prepare(node->context, options, 30);
    node->stream = stub.Session(&node->context);
    v1::AgentMessage join;
    SetJoin(join, job, n, n, "node-" + std::to_string(i), 30'000, 10'000);
    const bool written = node->stream->Write(join);
    nodes.push_back(std::move(node));
    if (!written) {
      EndNodes(nodes, true);
      return "join write failed";
    }
  }
  const auto last_join = Clock::now();
  std::set<int> ranks;
  int64_t round = -1;
  for (auto& node : nodes) {
    v1::ServerEvent event;
    if (!node->stream->Read(&event) || !event.has_round_ready()) {
      node->context.TryCancel();
      std::string what =
          event.has_job_failed() ? "job failed: " + event.job_failed().reason() : "no RoundReady";
      EndNodes(nodes, true);
      return what;
    }
    ranks.insert(event.round_ready().group_rank());
    round = event.round_ready().round();
    if (event.round_ready().group_world_size() != n) {
      EndNodes(nodes, true);
      return "RoundReady with group_world_size " +
             std::to_string(event.round_ready().group_world_size());
    }
  }
  round_ms = MsSince(last_join);
  if (static_cast<int>(ranks.size()) != n) {
    EndNodes(nodes, true);
    return "a group rank given twice";
  }
  for (auto& node : nodes) {
    v1::AgentMessage heartbeat;
    heartbeat.mutable_heartbeat()->set_round(round);
    v1::AgentMessage succeeded;
    succeeded.mutable_succeeded()->set_round(round);
    if (!node->stream->Write(heartbeat) || !node->stream->Write(succeeded)) {
      EndNodes(nodes, true);
      return "heartbeat or succeeded write failed";
    }
  }
  for (auto& node : nodes) {
    v1::ServerEvent event;
    if (!node->stream->Read(&event) || !event.has_job_complete()) {
      EndNodes(nodes, true);
      return "no JobComplete";
    }
  }
  for (auto& node : nodes) node->stream->WritesDone();
  for (auto& node : nodes) {
    v1::ServerEvent ignored;
    while (node->stream->Read(&ignored)) {
    }
    grpc::Status status = node->stream->Finish();
    node->stream.reset();
    if (!status.ok()) failure = status;
  }
  return failure.ok() ? "" : "stream ended with " + std::string(CodeName(failure.error_code()));
}

void GoodAgentLoop(const Options& options, int index, AgentTotals& totals) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "agent-" + std::to_string(index)));
  std::mt19937 random(static_cast<unsigned>(index));
  for (int seq = 0; g_phase.load() < 2; ++seq) {
    const int n = 2 + static_cast<int>(random() % 3);
    const int phase = g_phase.load();
    const auto start = Clock::now();
    double round_ms = 0;
    grpc::Status failure;
    const std::string job = "good-" + std::to_string(index) + "-" + std::to_string(seq);
    const std::string error = RunGoodJob(*stub, options, job, n, round_ms, failure);
    if (error.empty()) {
      ++totals.rounds_formed;
      totals.nodes += n;
      totals.jobs.Record(grpc::Status::OK, true, MsSince(start), phase);
      totals.rounds.Record(grpc::Status::OK, true, round_ms, phase);
    } else {
      totals.jobs.Record(failure.ok() ? grpc::Status(grpc::StatusCode::UNKNOWN, error) : failure,
                         false, MsSince(start), phase);
      totals.jobs.Note(job + ": " + error);
    }
  }
}

// ---- 2. Good store clients: their own job scopes, every op must succeed. ----

void GoodStoreLoop(const Options& options, int index, ClassStats& stats) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "store-" + std::to_string(index)));
  v1::StoreScope scope;
  scope.set_job_id("store-" + std::to_string(index));
  int64_t counter = 0;
  std::string cas_value;
  std::string last_key;
  std::string last_value;
  Pacer pacer(options.store_rate);
  for (long i = 0; g_phase.load() < 2; ++i) {
    pacer.Wait();
    const int phase = g_phase.load();
    grpc::ClientContext context;
    Prepare(context, options, 10);
    const auto start = Clock::now();
    grpc::Status status;
    bool right = true;
    switch (i % 5) {
      case 0: {
        v1::SetRequest request;
        *request.mutable_scope() = scope;
        last_key = "key-" + std::to_string(i % 64);
        last_value = std::string(100, 'v') + std::to_string(i);
        request.set_key(last_key);
        request.set_value(last_value);
        v1::SetResponse response;
        status = stub->Set(&context, request, &response);
        break;
      }
      case 1: {
        v1::GetRequest request;
        *request.mutable_scope() = scope;
        request.set_key(last_key);
        v1::GetResponse response;
        status = stub->Get(&context, request, &response);
        right = response.value() == last_value;
        break;
      }
      case 2: {
        v1::AddRequest request;
        *request.mutable_scope() = scope;
        request.set_key("counter");
        request.set_delta(1);
        v1::AddResponse response;
        status = stub->Add(&context, request, &response);
        if (status.ok()) right = response.value() == ++counter;
        break;
      }
      case 3: {
        v1::CompareSetRequest request;
        *request.mutable_scope() = scope;
        request.set_key("cas");
        request.set_expected(cas_value);
        const std::string desired = "cas-" + std::to_string(i);
        request.set_desired(desired);
        v1::CompareSetResponse response;
        status = stub->CompareSet(&context, request, &response);
        right = response.swapped() && response.value() == desired;
        if (right) cas_value = desired;
        break;
      }
      default: {
        v1::WaitRequest request;
        *request.mutable_scope() = scope;
        request.add_keys(last_key);
        request.set_timeout_ms(5000);
        v1::WaitResponse response;
        status = stub->Wait(&context, request, &response);
        break;
      }
    }
    const double ms = MsSince(start);
    if (status.ok() && !right) status = grpc::Status(grpc::StatusCode::DATA_LOSS, "wrong answer");
    stats.Record(status, status.ok(), ms, phase);
  }
}

// The daemon's deadlines under load: a wait for a key nobody sets, timeout 500 ms, must end with
// DEADLINE_EXCEEDED about 500 ms later. Records the lateness (elapsed - 500 ms).
void GoodTimeoutLoop(const Options& options, int index, ClassStats& stats) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "timeout-" + std::to_string(index)));
  Pacer pacer(2.0);
  while (g_phase.load() < 2) {
    pacer.Wait();
    const int phase = g_phase.load();
    grpc::ClientContext context;
    Prepare(context, options, 60);  // the client's own deadline: the server's is the finding
    v1::WaitRequest request;
    request.mutable_scope()->set_job_id("timeouts-" + std::to_string(index));
    request.add_keys("never-set");
    request.set_timeout_ms(500);
    v1::WaitResponse response;
    const auto start = Clock::now();
    grpc::Status status = stub->Wait(&context, request, &response);
    const double late_ms = MsSince(start) - 500;
    // Expected: the server's DEADLINE_EXCEEDED ("wait for 1 key(s) timed out ..."), on time
    // give or take a second; the client's own 60 s deadline firing first is a failure.
    const bool servers = status.error_code() == grpc::DEADLINE_EXCEEDED &&
                         status.error_message().rfind("wait for", 0) == 0;
    stats.Record(status, servers && late_ms > -5 && late_ms < 1000, late_ms, phase);
  }
}

// ---- 3. Bad clients. ----

std::string RandomBytes(std::mt19937& random, size_t size) {
  std::string bytes(size, '\0');
  for (auto& c : bytes) c = static_cast<char>(random() & 0xff);
  return bytes;
}

// Bytes no protobuf parser accepts: a field tag varint longer than ten bytes.
std::string MalformedBytes(std::mt19937& random, size_t size) {
  std::string bytes = std::string(12, '\xff') + RandomBytes(random, size);
  return bytes;
}

grpc::ByteBuffer ToByteBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

grpc::Status GenericUnary(grpc::GenericStub& stub, const Options& options,
                          const std::string& method, const std::string& bytes) {
  grpc::ClientContext context;
  Prepare(context, options, 10);
  grpc::ByteBuffer request = ToByteBuffer(bytes);
  grpc::ByteBuffer response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status result;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status status) {
                   std::lock_guard lock(mu);
                   result = std::move(status);
                   done = true;
                   cv.notify_all();
                 });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done; });
  return result;
}

// A Session call whose one message is `bytes`, through the completion-queue API (one operation
// in flight at a time, so each Next returns the operation just started).
grpc::Status GenericSession(grpc::GenericStub& stub, const Options& options,
                            const std::string& bytes) {
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  Prepare(context, options, 10);
  auto call = stub.PrepareCall(&context, "/ddprun.v1.Rendezvous/Session", &queue);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  queue.Next(&tag, &ok);
  if (ok) {
    call->Write(ToByteBuffer(bytes), reinterpret_cast<void*>(2));
    queue.Next(&tag, &ok);
  }
  if (ok) {
    call->WritesDone(reinterpret_cast<void*>(3));
    queue.Next(&tag, &ok);
  }
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(4));
  queue.Next(&tag, &ok);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

int TargetPort(const Options& options) {
  return std::atoi(options.target.substr(options.target.rfind(':') + 1).c_str());
}

// Raw bytes that are not HTTP/2 at all, on a plain TCP connection: the server must close it.
grpc::Status RawGarbage(const Options& options, std::mt19937& random) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {grpc::StatusCode::INTERNAL, "socket() failed"};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(TargetPort(options)));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  grpc::Status result;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    result = {grpc::StatusCode::UNAVAILABLE, "connect failed: " + std::string(strerror(errno))};
  } else {
    const std::string garbage = RandomBytes(random, 4096);
    (void)!::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    char buffer[4096];
    while (true) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n > 0) continue;
      if (n == 0 || errno == ECONNRESET) {
        result = {grpc::StatusCode::UNAVAILABLE, "closed by the server"};
      } else {
        result = {grpc::StatusCode::DEADLINE_EXCEEDED, "still open after 5 s"};
      }
      break;
    }
  }
  ::close(fd);
  return result;
}

struct BadKinds {
  ClassStats value_store{"bad: Set value 1 MiB + 1 (store limit)"};
  ClassStats value_transport{"bad: Set value 2 MiB (message limit)"};
  ClassStats key_long{"bad: key of 1025 bytes (Set, Add, CompareSet, Wait)"};
  ClassStats wait_keys{"bad: Wait on 2000 keys"};
  ClassStats fill{"bad: fill jobs past 64 MiB (1 MB values)"};
  ClassStats garbage_set{"bad: malformed bytes to /Set"};
  ClassStats garbage_session{"bad: malformed bytes to /Session"};
  ClassStats raw_tcp{"bad: 4 KiB of non-HTTP/2 bytes on a TCP connection"};
  ClassStats unauthenticated{"bad: no token / wrong token (Set, Session)"};
  ClassStats absurd{"bad: joins with absurd settings (see below)"};
  std::mutex fill_mu;
  std::vector<long> fill_accepted_bytes;  // per fill job
};

void BadLoop(const Options& options, int kind, int index, BadKinds& bad) {
  auto channel = NewChannel(options, "bad-" + std::to_string(kind) + "-" + std::to_string(index));
  auto stub = v1::Rendezvous::NewStub(channel);
  grpc::GenericStub generic(channel);
  std::mt19937 random(static_cast<unsigned>(kind * 1000 + index));
  Pacer pacer(options.bad_rate);
  v1::StoreScope scope;
  scope.set_job_id("bad-" + std::to_string(kind) + "-" + std::to_string(index));
  int fill_job = 0;
  bool filling = kind == 4;  // the filler runs at full speed until every fill job is full
  for (long i = 0; g_phase.load() == kMix; ++i) {
    if (!filling) pacer.Wait();
    grpc::ClientContext context;
    Prepare(context, options, 10);
    const auto start = Clock::now();
    auto code_is = [](const grpc::Status& s, std::initializer_list<grpc::StatusCode> codes) {
      return std::find(codes.begin(), codes.end(), s.error_code()) != codes.end();
    };
    switch (kind) {
      case 0: {
        v1::SetRequest request;
        *request.mutable_scope() = scope;
        request.set_key("big");
        request.set_value(std::string((1 << 20) + 1, 'x'));
        v1::SetResponse response;
        auto s = stub->Set(&context, request, &response);
        bad.value_store.Record(s, code_is(s, {grpc::RESOURCE_EXHAUSTED}), MsSince(start), kMix);
        break;
      }
      case 1: {
        v1::SetRequest request;
        *request.mutable_scope() = scope;
        request.set_key("bigger");
        request.set_value(std::string(2 << 20, 'x'));
        v1::SetResponse response;
        auto s = stub->Set(&context, request, &response);
        bad.value_transport.Record(s, code_is(s, {grpc::RESOURCE_EXHAUSTED}), MsSince(start), kMix);
        break;
      }
      case 2: {
        const std::string key(1025, 'k');
        grpc::Status s;
        switch (i % 4) {
          case 0: {
            v1::SetRequest request;
            *request.mutable_scope() = scope;
            request.set_key(key);
            request.set_value("v");
            v1::SetResponse response;
            s = stub->Set(&context, request, &response);
            break;
          }
          case 1: {
            v1::AddRequest request;
            *request.mutable_scope() = scope;
            request.set_key(key);
            request.set_delta(1);
            v1::AddResponse response;
            s = stub->Add(&context, request, &response);
            break;
          }
          case 2: {
            v1::CompareSetRequest request;
            *request.mutable_scope() = scope;
            request.set_key(key);
            request.set_desired("d");
            v1::CompareSetResponse response;
            s = stub->CompareSet(&context, request, &response);
            break;
          }
          default: {
            v1::WaitRequest request;
            *request.mutable_scope() = scope;
            request.add_keys(key);
            request.set_timeout_ms(1000);
            v1::WaitResponse response;
            s = stub->Wait(&context, request, &response);
            break;
          }
        }
        bad.key_long.Record(s, code_is(s, {grpc::INVALID_ARGUMENT}), MsSince(start), kMix);
        break;
      }
      case 3: {
        v1::WaitRequest request;
        *request.mutable_scope() = scope;
        for (int k = 0; k < 2000; ++k) request.add_keys("w" + std::to_string(k));
        request.set_timeout_ms(1000);
        v1::WaitResponse response;
        auto s = stub->Wait(&context, request, &response);
        bad.wait_keys.Record(s, code_is(s, {grpc::INVALID_ARGUMENT}), MsSince(start), kMix);
        break;
      }
      case 4: {
        if (index != 0) return;  // one filler: the per-job totals are exact then
        v1::SetRequest request;
        request.mutable_scope()->set_job_id("fill-" + std::to_string(fill_job));
        request.set_key("chunk-" + std::to_string(i));
        request.set_value(std::string(1'000'000, 'f'));
        v1::SetResponse response;
        auto s = stub->Set(&context, request, &response);
        const bool full = s.error_code() == grpc::RESOURCE_EXHAUSTED;
        bad.fill.Record(s, s.ok() || full, MsSince(start), kMix);
        std::lock_guard lock(bad.fill_mu);
        if (static_cast<int>(bad.fill_accepted_bytes.size()) <= fill_job) {
          bad.fill_accepted_bytes.push_back(0);
        }
        if (s.ok()) {
          bad.fill_accepted_bytes[static_cast<size_t>(fill_job)] +=
              static_cast<long>(request.key().size() + request.value().size());
        }
        if (full && fill_job + 1 < options.fill_jobs) {
          ++fill_job;
        } else if (full) {
          filling = false;
        }
        break;
      }
      case 5: {
        auto s = GenericUnary(generic, options, "/ddprun.v1.Rendezvous/Set",
                              MalformedBytes(random, 64 + random() % 4096));
        bad.garbage_set.Record(
            s, !code_is(s, {grpc::OK, grpc::UNAVAILABLE, grpc::UNKNOWN, grpc::DEADLINE_EXCEEDED}),
            MsSince(start), kMix);
        break;
      }
      case 6: {
        // OK is fine: the server reads an unparsable message as the end of the client's side.
        auto s = GenericSession(generic, options, MalformedBytes(random, 64 + random() % 4096));
        bad.garbage_session.Record(
            s, !code_is(s, {grpc::UNAVAILABLE, grpc::UNKNOWN, grpc::DEADLINE_EXCEEDED}),
            MsSince(start), kMix);
        break;
      }
      case 7: {
        auto s = RawGarbage(options, random);
        bad.raw_tcp.Record(s, s.error_code() == grpc::UNAVAILABLE, MsSince(start), kMix);
        break;
      }
      case 8: {
        grpc::Status s;
        if (i % 3 == 2) {
          grpc::ClientContext session_context;
          Prepare(session_context, options, 10, Token::kNone);
          auto stream = stub->Session(&session_context);
          v1::AgentMessage join;
          SetJoin(join, "unauthenticated", 1, 1, "n", 1000, 1000);
          stream->Write(join);
          v1::ServerEvent event;
          while (stream->Read(&event)) {
          }
          s = stream->Finish();
        } else {
          grpc::ClientContext set_context;
          Prepare(set_context, options, 10, i % 3 == 0 ? Token::kNone : Token::kWrong);
          v1::SetRequest request;
          *request.mutable_scope() = scope;
          request.set_key("k");
          request.set_value("v");
          v1::SetResponse response;
          s = stub->Set(&set_context, request, &response);
        }
        bad.unauthenticated.Record(s, code_is(s, {grpc::UNAUTHENTICATED}), MsSince(start), kMix);
        break;
      }
      default:
        return;
    }
  }
}

// Joins with absurd settings: what the daemon answered to each, as "variant -> outcome".
struct AbsurdOutcomes {
  std::mutex mu;
  std::map<std::string, std::map<std::string, long>> seen;
  void Add(const std::string& variant, const std::string& outcome) {
    std::lock_guard lock(mu);
    ++seen[variant][outcome];
  }
};

// Opens `nodes` sessions on the job with the given joins, reads the first event of each (or its
// end) within 3 s, and describes what came back.
std::string AbsurdJoin(v1::Rendezvous::Stub& stub, const Options& options,
                       std::vector<v1::AgentMessage> messages, bool& refused) {
  std::vector<std::unique_ptr<SyncNode>> nodes;
  for (auto& message : messages) {
    auto node = std::make_unique<SyncNode>();
    Prepare(node->context, options, 3);
    node->stream = stub.Session(&node->context);
    node->stream->Write(message);
    nodes.push_back(std::move(node));
  }
  std::string outcome;
  refused = false;
  for (auto& node : nodes) {
    v1::ServerEvent event;
    if (node->stream->Read(&event)) {
      if (event.has_round_ready()) {
        const auto& ready = event.round_ready();
        outcome = "RoundReady world_size=" + std::to_string(ready.world_size()) +
                  " group_world_size=" + std::to_string(ready.group_world_size()) +
                  " first_global_rank=" + std::to_string(ready.first_global_rank());
      } else if (event.has_job_failed()) {
        outcome = "JobFailed: " + event.job_failed().reason().substr(0, 100);
      } else if (event.has_restart()) {
        outcome = "Restart: " + event.restart().reason().substr(0, 80);
      } else {
        outcome = "another event";
      }
    } else {
      grpc::Status status = node->stream->Finish();
      node->stream.reset();
      refused = status.error_code() != grpc::DEADLINE_EXCEEDED;
      outcome = std::string(CodeName(status.error_code())) +
                (refused ? ": " + status.error_message().substr(0, 90)
                         : " (accepted; no event within 3 s)");
    }
  }
  EndNodes(nodes, true);
  return outcome;
}

constexpr int kAbsurdVariants = 11;

// One variant, about once a second, on its own channel and thread.
void AbsurdLoop(const Options& options, int which, BadKinds& bad, AbsurdOutcomes& outcomes) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "absurd-" + std::to_string(which)));
  Pacer pacer(1.0);
  for (long i = 0; g_phase.load() == kMix; ++i) {
    pacer.Wait();
    const std::string job = "absurd-" + std::to_string(which) + "-" + std::to_string(i);
    std::vector<v1::AgentMessage> messages(1);
    std::string variant;
    bool should_refuse = true;
    switch (which) {
      case 0:
        variant = "max_nodes=2^31-1 (min 1)";
        SetJoin(messages[0], job, 1, kInt32Max, "n", 30'000, 30'000);
        break;  // over JobLimits::max_nodes_per_job
      case 1:
        variant = "2 nodes of nproc=2^31-1";
        messages.resize(2);
        for (int n = 0; n < 2; ++n) {
          SetJoin(messages[static_cast<size_t>(n)], job, 2, 2, "n" + std::to_string(n), 30'000,
                  30'000);
          messages[static_cast<size_t>(n)].mutable_join()->mutable_node()->set_nproc(kInt32Max);
        }
        break;
      case 2:
        variant = "negative timeouts (join, last call, heartbeat = -1)";
        SetJoin(messages[0], job, 1, 1, "n", -1, -1);
        messages[0].mutable_join()->mutable_settings()->set_last_call_timeout_ms(-1);
        break;  // 0 means the default; a negative timeout is refused
      case 3:
        variant = "join and heartbeat timeouts = 2^63-1 ms (min 2, one node)";
        SetJoin(messages[0], job, 2, 2, "n", kInt64Max, kInt64Max);
        break;
      case 4:
        variant = "min_nodes=0";
        SetJoin(messages[0], job, 0, 2, "n", 30'000, 30'000);
        break;
      case 5:
        variant = "max_nodes < min_nodes";
        SetJoin(messages[0], job, 4, 2, "n", 30'000, 30'000);
        break;
      case 6:
        variant = "nproc=0";
        SetJoin(messages[0], job, 1, 1, "n", 30'000, 30'000);
        messages[0].mutable_join()->mutable_node()->set_nproc(0);
        break;
      case 7:
        variant = "no job id";
        SetJoin(messages[0], "", 1, 1, "n", 30'000, 30'000);
        break;
      case 8:
        variant = "a heartbeat before any join";
        messages[0].mutable_heartbeat()->set_round(0);
        break;
      case 9:
        variant = "requested_group_rank=2^31-1";
        SetJoin(messages[0], job, 1, 2, "n", 30'000, 30'000);
        messages[0].mutable_join()->mutable_node()->set_requested_group_rank(kInt32Max);
        messages[0].mutable_join()->mutable_node()->set_has_requested_group_rank(true);
        break;
      default:
        variant = "job id and node id of 500,000 bytes each (min 2, one node)";
        SetJoin(messages[0], job + std::string(500'000, 'j'), 2, 2, std::string(500'000, 'n'),
                30'000, 30'000);
        break;
    }
    const auto start = Clock::now();
    bool refused = false;
    const std::string outcome = AbsurdJoin(*stub, options, messages, refused);
    outcomes.Add(variant, outcome);
    grpc::Status as_status =
        refused ? grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, outcome) : grpc::Status::OK;
    // A job the daemon could not have run sensibly and still accepted is a finding, not noise.
    bool expected = refused == should_refuse;
    if (which == 1 && outcome.find("world_size=-") != std::string::npos) expected = false;
    bad.absurd.Record(as_status, expected, MsSince(start), kMix);
    if (!expected) bad.absurd.Note(variant + " -> " + outcome);
  }
}

// ---- 4. Vanishing clients. ----

// Sessions that join and are cancelled without WritesDone, and waits that are cancelled, each on
// a fresh channel that is then dropped.
void CancelLoop(const Options& options, int index, ClassStats& stats) {
  for (long i = 0; g_phase.load() == kMix; ++i) {
    auto channel = NewChannel(options, "cancel-" + std::to_string(index) + "-" + std::to_string(i));
    auto stub = v1::Rendezvous::NewStub(channel);
    const auto start = Clock::now();
    std::vector<std::unique_ptr<SyncNode>> nodes;
    const std::string job = "cancel-" + std::to_string(index) + "-" + std::to_string(i);
    bool ready = true;
    for (int n = 0; n < 2; ++n) {
      auto node = std::make_unique<SyncNode>();
      Prepare(node->context, options, 10);
      node->stream = stub->Session(&node->context);
      v1::AgentMessage join;
      SetJoin(join, job, 2, 2, "n" + std::to_string(n), 5000, 5000);
      node->stream->Write(join);
      nodes.push_back(std::move(node));
    }
    for (auto& node : nodes) {
      v1::ServerEvent event;
      ready = node->stream->Read(&event) && event.has_round_ready() && ready;
    }
    // A wait that will never be satisfied, cancelled after a moment.
    grpc::ClientContext wait_context;
    Prepare(wait_context, options, 10);
    v1::WaitRequest request;
    request.mutable_scope()->set_job_id(job);
    request.add_keys("never");
    request.set_timeout_ms(60'000);
    v1::WaitResponse response;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      wait_context.TryCancel();
    });
    grpc::Status wait_status = stub->Wait(&wait_context, request, &response);
    canceller.join();
    EndNodes(nodes, true);  // cancelled mid-round: no WritesDone, no Succeeded, no Leave
    const bool expected = ready && wait_status.error_code() == grpc::CANCELLED;
    stats.Record(ready ? wait_status : grpc::Status(grpc::StatusCode::UNKNOWN, "no RoundReady"),
                 expected, MsSince(start), kMix);
  }
}

// Child mode: `vanish_sessions` sessions that each form a one-node round (the RoundReady is the
// proof the join arrived) and as many pending waits, then _exit: the kernel closes the socket.
int VanishChild(const Options& options) {
  alarm(20);  // bounded whatever happens
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "vanish-" + options.child_id));
  std::vector<std::unique_ptr<SyncNode>> nodes;
  for (int s = 0; s < options.vanish_sessions; ++s) {
    auto node = std::make_unique<SyncNode>();
    Prepare(node->context, options, 15);
    node->stream = stub->Session(&node->context);
    v1::AgentMessage join;
    SetJoin(join, "vanish-" + options.child_id + "-" + std::to_string(s), 1, 1, "n", 5000, 5000);
    node->stream->Write(join);
    nodes.push_back(std::move(node));
  }
  int ready = 0;
  for (auto& node : nodes) {
    v1::ServerEvent event;
    if (node->stream->Read(&event) && event.has_round_ready()) ++ready;
  }
  struct PendingWait {
    grpc::ClientContext context;
    v1::WaitRequest request;
    v1::WaitResponse response;
  };
  std::vector<std::unique_ptr<PendingWait>> waits;
  for (int s = 0; s < options.vanish_sessions; ++s) {
    auto wait = std::make_unique<PendingWait>();
    Prepare(wait->context, options, 15);
    wait->request.mutable_scope()->set_job_id("vanish-" + options.child_id);
    wait->request.add_keys("never-" + std::to_string(s));
    wait->request.set_timeout_ms(60'000);
    stub->async()->Wait(&wait->context, &wait->request, &wait->response, [](grpc::Status) {});
    waits.push_back(std::move(wait));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the waits reach the server
  std::fflush(stdout);
  _exit(ready == options.vanish_sessions ? 0 : 3);
}

void VanishLoop(const Options& options, const std::string& self, ClassStats& stats) {
  Pacer pacer(options.vanish_rate);
  std::vector<std::pair<pid_t, Clock::time_point>> running;
  auto reap = [&](bool block) {
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t done = ::waitpid(it->first, &status, block ? 0 : WNOHANG);
      if (done == 0) {
        ++it;
        continue;
      }
      const bool fine = done > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
      stats.Record(
          fine ? grpc::Status::OK
               : grpc::Status(grpc::StatusCode::UNKNOWN, "child " + std::to_string(it->first) +
                                                             " status " + std::to_string(status)),
          fine, MsSince(it->second), kMix);
      it = running.erase(it);
    }
  };
  for (long i = 0; g_phase.load() == kMix; ++i) {
    pacer.Wait();
    reap(false);
    if (running.size() >= 32) continue;  // the machine's two cores: never a pile of children
    std::vector<std::string> args = {
        self,
        "--child",
        "--child_id=" + std::to_string(::getpid()) + "-" + std::to_string(i),
        "--target=" + options.target,
        "--token=" + options.token,
        "--vanish_sessions=" + std::to_string(options.vanish_sessions)};
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), environ) == 0) {
      running.emplace_back(pid, Clock::now());
    } else {
      stats.Note("posix_spawn failed");
    }
  }
  reap(true);
}

// Many streams in one job: callback-API sessions, joined and held.
class HeldSession final : public grpc::ClientBidiReactor<v1::AgentMessage, v1::ServerEvent> {
 public:
  HeldSession(v1::Rendezvous::Stub& stub, const Options& options, v1::AgentMessage join)
      : join_(std::move(join)) {
    if (!options.token.empty()) context_.AddMetadata(ddprun::kTokenMetadataKey, options.token);
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
    stub.async()->Session(&context_, this);
    StartWrite(&join_);
    StartRead(&event_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    written_ = ok;
    write_done_ = true;
    cv_.notify_all();
  }
  void OnReadDone(bool ok) override {
    if (ok && event_.has_round_ready()) ready_ = true;
    if (ok) StartRead(&event_);
  }
  void OnDone(const grpc::Status& status) override {
    std::lock_guard lock(mu_);
    status_ = status;
    done_ = true;
    cv_.notify_all();
  }
  bool AwaitWritten() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return write_done_ || done_; });
    return written_;
  }
  grpc::Status AwaitDone() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return done_; });
    return done_ ? status_ : grpc::Status(grpc::StatusCode::UNKNOWN, "not done after 60 s");
  }
  bool ready() const { return ready_; }

 private:
  grpc::ClientContext context_;
  v1::AgentMessage join_;
  v1::ServerEvent event_;
  std::atomic<bool> ready_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool write_done_ = false;
  bool written_ = false;
  bool done_ = false;
  grpc::Status status_;
};

struct HeldSessions {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::Rendezvous::Stub>> stubs;
  std::vector<std::unique_ptr<HeldSession>> sessions;

  // `joins[i]` on channel i % 16; returns how many joins were written.
  int Open(const Options& options, const std::string& tag, std::vector<v1::AgentMessage> joins) {
    for (int c = 0; c < 16; ++c) {
      channels.push_back(NewChannel(options, tag + std::to_string(c)));
      stubs.push_back(v1::Rendezvous::NewStub(channels.back()));
    }
    for (size_t i = 0; i < joins.size(); ++i) {
      sessions.push_back(
          std::make_unique<HeldSession>(*stubs[i % stubs.size()], options, std::move(joins[i])));
    }
    int written = 0;
    for (auto& session : sessions) written += session->AwaitWritten() ? 1 : 0;
    return written;
  }
  // Cancels every session; returns how many ended other than CANCELLED (should be 0).
  int Close(std::string& example) {
    for (auto& session : sessions) session->Cancel();
    int other = 0;
    for (auto& session : sessions) {
      grpc::Status status = session->AwaitDone();
      if (status.error_code() != grpc::CANCELLED) {
        ++other;
        if (example.empty()) {
          example = std::string(CodeName(status.error_code())) + ": " + status.error_message();
        }
      }
    }
    sessions.clear();
    stubs.clear();
    channels.clear();
    return other;
  }
  int Ready() const {
    int n = 0;
    for (auto& session : sessions) n += session->ready() ? 1 : 0;
    return n;
  }
};

struct PendingWait {
  grpc::ClientContext context;
  v1::WaitRequest request;
  v1::WaitResponse response;
};

struct HeldWaits {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Rendezvous::Stub> stub;
  std::vector<std::unique_ptr<PendingWait>> waits;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::map<std::string, int> endings;

  void Open(const Options& options, int count, int keys) {
    channel = NewChannel(options, "held-waits");
    stub = v1::Rendezvous::NewStub(channel);
    for (int w = 0; w < count; ++w) {
      auto wait = std::make_unique<PendingWait>();
      if (!options.token.empty())
        wait->context.AddMetadata(ddprun::kTokenMetadataKey, options.token);
      wait->context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
      wait->request.mutable_scope()->set_job_id("held-waits");
      for (int k = 0; k < keys; ++k) {
        char key[80];
        std::snprintf(key, sizeof(key), "held-wait-%06d-key-%06d-%040d", w, k, 0);
        wait->request.add_keys(key);
      }
      wait->request.set_timeout_ms(24LL * 3600 * 1000);
      stub->async()->Wait(&wait->context, &wait->request, &wait->response,
                          [this](grpc::Status status) {
                            std::lock_guard lock(mu);
                            ++endings[CodeName(status.error_code())];
                            ++done;
                            cv.notify_all();
                          });
      waits.push_back(std::move(wait));
    }
  }
  std::map<std::string, int> Close() {
    for (auto& wait : waits) wait->context.TryCancel();
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(60),
                [this] { return done == static_cast<int>(waits.size()); });
    auto result = endings;
    lock.unlock();
    if (done == static_cast<int>(waits.size())) waits.clear();  // else leaked: the process ends
    return result;
  }
};

long CountJobs(const Options& options, const std::string& job_id, long* nodes) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "describe"));
  grpc::ClientContext context;
  Prepare(context, options, 60);
  v1::DescribeJobsRequest request;
  request.set_job_id(job_id);
  v1::DescribeJobsResponse response;
  grpc::Status status = stub->DescribeJobs(&context, request, &response);
  if (!status.ok()) return -1;
  if (nodes != nullptr) {
    *nodes = 0;
    for (const auto& job : response.jobs()) *nodes += job.nodes_size();
  }
  return response.jobs_size();
}

// RSS after the daemon has settled for a moment, in KiB.
long SettledRss(const Options& options, int settle_ms = 1500) {
  std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
  return ReadRssKib(options.daemon_pid);
}

void Usage() {
  std::fprintf(stderr,
               "usage: daemon_load --target=HOST:PORT [--token_file=PATH] [--daemon_pid=PID] "
               "[--baseline_s=10] [--mix_s=60] [--agent_threads=200] [--store_clients=64] "
               "[--store_rate=50] [--bad_threads=1] [--bad_rate=20] [--fill_jobs=3] "
               "[--crowd=5000] [--held_waits=500] [--held_wait_keys=1024] [--cancel_threads=2] "
               "[--vanish_rate=10] [--vanish_sessions=20] [--probe_jobs=2000] "
               "[--resume_world=1000000]\n");
}

bool ParseFlags(int argc, char** argv, Options& o) {
  std::map<std::string, std::function<void(const std::string&)>> flags = {
      {"target", [&](const std::string& v) { o.target = v; }},
      {"token", [&](const std::string& v) { o.token = v; }},
      {"token_file",
       [&](const std::string& v) {
         std::ifstream file(v);
         std::getline(file, o.token);
         while (!o.token.empty() && std::isspace(static_cast<unsigned char>(o.token.back()))) {
           o.token.pop_back();
         }
       }},
      {"daemon_pid", [&](const std::string& v) { o.daemon_pid = std::stoi(v); }},
      {"baseline_s", [&](const std::string& v) { o.baseline_s = std::stod(v); }},
      {"mix_s", [&](const std::string& v) { o.mix_s = std::stod(v); }},
      {"agent_threads", [&](const std::string& v) { o.agent_threads = std::stoi(v); }},
      {"store_clients", [&](const std::string& v) { o.store_clients = std::stoi(v); }},
      {"store_rate", [&](const std::string& v) { o.store_rate = std::stod(v); }},
      {"bad_threads", [&](const std::string& v) { o.bad_threads = std::stoi(v); }},
      {"bad_rate", [&](const std::string& v) { o.bad_rate = std::stod(v); }},
      {"fill_jobs", [&](const std::string& v) { o.fill_jobs = std::stoi(v); }},
      {"crowd", [&](const std::string& v) { o.crowd = std::stoi(v); }},
      {"held_waits", [&](const std::string& v) { o.held_waits = std::stoi(v); }},
      {"held_wait_keys", [&](const std::string& v) { o.held_wait_keys = std::stoi(v); }},
      {"cancel_threads", [&](const std::string& v) { o.cancel_threads = std::stoi(v); }},
      {"vanish_rate", [&](const std::string& v) { o.vanish_rate = std::stod(v); }},
      {"vanish_sessions", [&](const std::string& v) { o.vanish_sessions = std::stoi(v); }},
      {"probe_jobs", [&](const std::string& v) { o.probe_jobs = std::stoi(v); }},
      {"resume_world", [&](const std::string& v) { o.resume_world = std::stoi(v); }},
      {"child_id", [&](const std::string& v) { o.child_id = v; }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--child") {
      o.child = true;
      continue;
    }
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "daemon_load: not a --name=value flag: %s\n", arg.c_str());
      return false;
    }
    auto flag = flags.find(arg.substr(2, eq - 2));
    if (flag == flags.end()) {
      std::fprintf(stderr, "daemon_load: unknown flag %s\n", arg.c_str());
      return false;
    }
    try {
      flag->second(arg.substr(eq + 1));
    } catch (const std::exception&) {
      std::fprintf(stderr, "daemon_load: bad value in %s\n", arg.c_str());
      return false;
    }
  }
  return true;
}

void PrintGood(ClassStats& stats, double baseline_s, double mix_s) {
  std::printf("| %s | baseline | %ld | %.0f/s | %s |\n", stats.name().c_str(),
              stats.calls_in(kBaseline), stats.calls_in(kBaseline) / baseline_s,
              stats.Latency(kBaseline).c_str());
  std::printf("| %s | mix | %ld | %.0f/s | %s |\n", stats.name().c_str(), stats.calls_in(kMix),
              stats.calls_in(kMix) / mix_s, stats.Latency(kMix).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseFlags(argc, argv, options)) {
    Usage();
    return 2;
  }
  if (options.child) return VanishChild(options);
  const std::string self = [] {
    char path[4096];
    const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
    return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
  }();

  // The watchdog: a hang anywhere must not outlive its budget.
  const double budget_s = options.baseline_s + options.mix_s + 240;
  std::thread([budget_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(budget_s));
    std::fprintf(stderr, "daemon_load: still running after %.0f s; giving up\n", budget_s);
    std::fflush(stdout);
    _exit(1);
  }).detach();

  AgentTotals agents;
  ClassStats store("good store: Set/Get/Add/CompareSet/Wait");
  ClassStats timeouts("good: Wait timeout 500 ms, lateness of DEADLINE_EXCEEDED");
  BadKinds bad;
  AbsurdOutcomes absurd;
  ClassStats cancelled("vanish: 2-node round, wait, then cancel all (fresh channel)");
  ClassStats vanished("vanish: child process joins 20 + waits 20, then _exit");

  // ---- Probes, on the fresh daemon: one resource at a time, the ones that leave the least
  // freed memory behind (which later allocations would reuse unseen) first. ----
  g_phase = 3;
  const long rss_start = ReadRssKib(options.daemon_pid);
  Event("probe_jobs");
  // Jobs, 100 at a time: each a forming job (min 2) whose one node's stream is then cancelled;
  // the streams' memory is reused batch after batch, the jobs stay (until join_timeout).
  const long rss_before_jobs = ReadRssKib(options.daemon_pid);
  int probe_written = 0;
  for (int first = 0; first < options.probe_jobs; first += 100) {
    HeldSessions batch;
    std::vector<v1::AgentMessage> joins;
    for (int i = first; i < std::min(options.probe_jobs, first + 100); ++i) {
      joins.emplace_back();
      SetJoin(joins.back(), "probe-job-" + std::to_string(i), 2, 2, "n", 600'000, 600'000);
    }
    probe_written += batch.Open(options, "probe-", std::move(joins));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the joins are processed
    std::string ignored;
    batch.Close(ignored);
  }
  long probe_jobs_seen = CountJobs(options, "", nullptr);
  const long rss_jobs = SettledRss(options, 2500);  // their nodes are lost after 1 s

  Event("probe_resume");
  const long rss_before_resume = ReadRssKib(options.daemon_pid);
  HeldSessions resume;
  std::vector<v1::AgentMessage> resume_join(1);
  SetJoin(resume_join[0], "probe-resume", 1, kInt32Max, "n", 600'000, 2000);
  auto* running = resume_join[0].mutable_join()->mutable_running();
  running->set_round(7);
  running->set_group_rank(0);
  running->set_group_world_size(options.resume_world);
  resume.Open(options, "resume-", std::move(resume_join));
  const long rss_resume = SettledRss(options);
  std::string resume_example;
  resume.Close(resume_example);
  const long rss_resume_after = SettledRss(options, 4000);  // past the readopt deadline (2 s)

  Event("probe_crowd");
  auto crowd_joins = [&options] {
    std::vector<v1::AgentMessage> joins(static_cast<size_t>(options.crowd));
    for (int i = 0; i < options.crowd; ++i) {
      SetJoin(joins[static_cast<size_t>(i)], "crowd", 2, 2, "crowd-node-" + std::to_string(i),
              600'000, 600'000);
    }
    return joins;
  };
  const long rss_before_crowd = ReadRssKib(options.daemon_pid);
  HeldSessions probe_crowd;
  const int crowd_written = probe_crowd.Open(options, "crowd-", crowd_joins());
  long crowd_nodes = 0;
  CountJobs(options, "crowd", &crowd_nodes);
  const long rss_after_crowd = SettledRss(options);
  const int probe_crowd_ready = probe_crowd.Ready();

  Event("probe_waits");
  HeldWaits probe_waits;
  probe_waits.Open(options, options.held_waits, options.held_wait_keys);
  const long rss_after_waits = SettledRss(options, 3000);
  std::string probe_crowd_example;
  const int probe_crowd_other = probe_crowd.Close(probe_crowd_example);
  probe_waits.Close();
  const long rss_probes_closed = SettledRss(options, 2500);  // the crowd's nodes are lost

  // ---- The load: a baseline of good clients, then the mix. ----
  g_phase = kBaseline;
  Event("baseline_start");
  std::vector<std::thread> good;
  for (int i = 0; i < options.agent_threads; ++i) {
    good.emplace_back(GoodAgentLoop, std::cref(options), i, std::ref(agents));
  }
  for (int i = 0; i < options.store_clients; ++i) {
    good.emplace_back(GoodStoreLoop, std::cref(options), i, std::ref(store));
  }
  for (int i = 0; i < 4; ++i) {
    good.emplace_back(GoodTimeoutLoop, std::cref(options), i, std::ref(timeouts));
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(options.baseline_s));
  const long rss_baseline = ReadRssKib(options.daemon_pid);

  // The mix: the crowd (in a job of its own name) and the held waits again, held throughout,
  // and every bad and vanishing class.
  g_phase = kMix;
  Event("mix_start");
  const auto mix_start = Clock::now();
  HeldSessions crowd;
  {
    auto joins = crowd_joins();
    for (auto& join : joins) join.mutable_join()->set_job_id("crowd-mix");
    crowd.Open(options, "crowd-mix-", std::move(joins));
  }
  HeldWaits held_waits;
  held_waits.Open(options, options.held_waits, options.held_wait_keys);
  Event("mix_held_open");

  std::vector<std::thread> mix;
  for (int kind = 0; kind <= 8; ++kind) {
    for (int t = 0; t < options.bad_threads; ++t) {
      mix.emplace_back(BadLoop, std::cref(options), kind, t, std::ref(bad));
    }
  }
  for (int which = 0; which < kAbsurdVariants; ++which) {
    mix.emplace_back(AbsurdLoop, std::cref(options), which, std::ref(bad), std::ref(absurd));
  }
  for (int t = 0; t < options.cancel_threads; ++t) {
    mix.emplace_back(CancelLoop, std::cref(options), t, std::ref(cancelled));
  }
  mix.emplace_back(VanishLoop, std::cref(options), std::cref(self), std::ref(vanished));
  std::this_thread::sleep_until(mix_start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(options.mix_s)));
  const double mix_s = std::chrono::duration<double>(Clock::now() - mix_start).count();
  const int crowd_ready = crowd.Ready();
  const long rss_mix_end = ReadRssKib(options.daemon_pid);
  g_phase = 2;
  Event("mix_end");
  for (auto& thread : good) thread.join();
  for (auto& thread : mix) thread.join();
  std::string crowd_example;
  const int crowd_other = crowd.Close(crowd_example);
  const auto wait_endings = held_waits.Close();
  Event("clients_stopped");
  long nodes_left = 0;
  const long jobs_after_mix = CountJobs(options, "", &nodes_left);
  const long rss_after_clients = SettledRss(options, 3000);
  const bool alive = DaemonAlive(options.daemon_pid);

  // ---- The report. ----
  auto mib = [](long kib) { return kib / 1024.0; };
  std::printf("\n## daemon_load: baseline %.0f s, mix %.1f s, daemon %s at the end\n\n",
              options.baseline_s, mix_s, alive ? "alive" : "GONE");
  std::printf("Good clients, baseline vs under the mix (latency p50 / p99 / max, ms):\n\n");
  std::printf("| class | phase | calls | rate | latency ms |\n| --- | --- | --- | --- | --- |\n");
  PrintGood(agents.jobs, options.baseline_s, mix_s);
  PrintGood(agents.rounds, options.baseline_s, mix_s);
  PrintGood(store, options.baseline_s, mix_s);
  PrintGood(timeouts, options.baseline_s, mix_s);
  std::printf("\nrounds formed %ld (nodes %ld); good job failures %ld; good store failures %ld\n",
              agents.rounds_formed.load(), agents.nodes.load(), agents.jobs.unexpected(),
              store.unexpected());

  std::printf(
      "\nEvery class (refused: by status code; unexpected: outcomes that should not "
      "happen):\n\n");
  std::printf("| class | calls | ok | refused | unexpected |\n| --- | --- | --- | --- | --- |\n");
  ClassStats* all[] = {&agents.jobs,
                       &store,
                       &timeouts,
                       &bad.value_store,
                       &bad.value_transport,
                       &bad.key_long,
                       &bad.wait_keys,
                       &bad.fill,
                       &bad.garbage_set,
                       &bad.garbage_session,
                       &bad.raw_tcp,
                       &bad.unauthenticated,
                       &bad.absurd,
                       &cancelled,
                       &vanished};
  for (ClassStats* stats : all) stats->Print();
  std::printf("\nUnexpected outcomes, first of each class:\n");
  for (ClassStats* stats : all) stats->PrintExamples();
  std::printf("\nThe first message of each refusal:\n");
  for (ClassStats* stats : all) stats->PrintRefusals();

  std::printf("\nFill jobs: accepted bytes per job (limit %d):", 64 << 20);
  for (long bytes : bad.fill_accepted_bytes) std::printf(" %ld", bytes);
  std::printf("\n\nAbsurd joins, what the daemon answered:\n");
  for (const auto& [variant, seen] : absurd.seen) {
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
      probe_written, probe_jobs_seen, mib(rss_before_jobs), mib(rss_jobs),
      per(rss_before_jobs, rss_jobs, options.probe_jobs));
  std::printf(
      "| one join adopting a round of group_world_size=%d (max_nodes 2^31-1) | 1 | %.1f | "
      "%.1f | %.1f MiB; %.1f MiB still held 4 s after its stream ended |\n",
      options.resume_world, mib(rss_before_resume), mib(rss_resume),
      mib(rss_resume - rss_before_resume), mib(rss_resume_after - rss_before_resume));
  std::printf(
      "| streams joined to one job (min=max=2), held | %d written, %ld nodes in the job, %d "
      "RoundReady | %.1f | %.1f | %.0f B/stream |\n",
      crowd_written, crowd_nodes, probe_crowd_ready, mib(rss_before_crowd), mib(rss_after_crowd),
      per(rss_before_crowd, rss_after_crowd, options.crowd));
  std::printf("| pending waits of %d keys (64 B each), held | %d | %.1f | %.1f | %.0f B/wait |\n",
              options.held_wait_keys, options.held_waits, mib(rss_after_crowd),
              mib(rss_after_waits), per(rss_after_crowd, rss_after_waits, options.held_waits));
  std::printf(
      "\nafter the probes' streams and waits ended: RSS %.1f MiB; their streams ending "
      "other than CANCELLED: %d %s\n",
      mib(rss_probes_closed), probe_crowd_other, probe_crowd_example.c_str());
  std::printf(
      "in the mix: %d crowd streams held (%d RoundReady), %d ending other than CANCELLED "
      "%s\n",
      options.crowd, crowd_ready, crowd_other, crowd_example.c_str());
  std::printf("held waits' endings:");
  for (const auto& [code, count] : wait_endings) std::printf(" %s %d", code.c_str(), count);
  std::printf("\njobs the daemon holds after the mix: %ld (nodes %ld)\n", jobs_after_mix,
              nodes_left);
  std::printf(
      "daemon RSS MiB: start %.1f, probes over %.1f, baseline end %.1f, mix end %.1f, "
      "clients stopped %.1f\n",
      mib(rss_start), mib(rss_probes_closed), mib(rss_baseline), mib(rss_mix_end),
      mib(rss_after_clients));
  std::fflush(stdout);
  Event("done");
  return alive ? 0 : 1;
}
