// The bad clients; see bad_clients.h.
#include "bad_clients.h"

#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <random>

#include "load_basics.h"

namespace ddprun::daemon_load {

namespace {

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

}  // namespace

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

}  // namespace ddprun::daemon_load
