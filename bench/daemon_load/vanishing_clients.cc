// The vanishing clients; see vanishing_clients.h.
#include "vanishing_clients.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "load_basics.h"

extern char** environ;

namespace ddprun::daemon_load {

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

}  // namespace ddprun::daemon_load
