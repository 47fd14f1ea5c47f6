// Every RPC handler of the rendezvous service, in-process: the real RendezvousService on a real
// gRPC server, called over the server's in-process channel, each request parsed from the
// fuzzer's bytes as the server would parse it from the wire.
//
// The input is a sequence of calls, at most kMaxCalls: an operation byte, a 16-bit little-endian
// length, then that many bytes of message (fewer where the input ends). The operation, modulo
// 9, is Set, Get, Wait, Add, CompareSet, Delete, DescribeJobs, or a message on one of two agent
// Session streams (two, so that a round of two nodes can form); with its top bit set, a unary
// call goes without the token, and must be refused as UNAUTHENTICATED. Bytes that do not parse
// as the request are skipped: the server would have refused them before any handler ran.
//
// Checked of every answer: a call that does not wait answers at once (no DEADLINE_EXCEEDED
// within 10 s), and an error the service gives says what was wrong on one line. The service
// lives for the whole run, as the daemon's does: inputs meet the state earlier inputs left.
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "ddprun/rendezvous/call_authentication.h"
#include "ddprun/rendezvous/key_value_store.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"
#include "fuzz_support.h"
#include "rendezvous_service.h"

namespace {

namespace v1 = ddprun::v1;

constexpr char kToken[] = "fuzz-token";
constexpr int kMaxCalls = 32;
// A Wait on a key no one sets waits this long before the client gives up on it.
constexpr auto kWaitDeadline = std::chrono::milliseconds(5);
constexpr auto kAnswerDeadline = std::chrono::seconds(10);

struct Server {
  ddprun::KeyValueStore store;
  std::unique_ptr<ddprun::RendezvousService> service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<v1::Rendezvous::Stub> stub;
};
Server* server = nullptr;

void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::abort();
}

void CheckAnswer(const char* method, const grpc::Status& status, bool waits) {
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !waits) {
    Fail(std::string(method) + " did not answer within 10 s");
  }
  if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED &&
      status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
    ddprun::fuzz::CheckOneLineMessage(status.error_message());
  }
}

std::unique_ptr<grpc::ClientContext> NewContext(bool with_token,
                                                std::chrono::milliseconds deadline) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (with_token) context->AddMetadata(ddprun::kTokenMetadataKey, kToken);
  context->set_deadline(std::chrono::system_clock::now() + deadline);
  return context;
}

// One unary call of `method` with `bytes` as its request, if they parse as one.
template <typename Request, typename Response, typename Call>
void CallUnary(const char* method, std::string_view bytes, bool with_token, bool waits, Call call) {
  Request request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  Response response;
  // A call without the token is refused before it can wait, so it gets the long deadline too: a
  // Wait's 5 ms could pass before a loaded machine refused it, and its DEADLINE_EXCEEDED would
  // then read as a missing refusal.
  const bool may_wait = waits && with_token;
  auto context =
      NewContext(with_token,
                 may_wait ? kWaitDeadline
                          : std::chrono::duration_cast<std::chrono::milliseconds>(kAnswerDeadline));
  const grpc::Status status = (server->stub.get()->*call)(context.get(), request, &response);
  CheckAnswer(method, status, may_wait);
  if (!with_token && status.error_code() != grpc::StatusCode::UNAUTHENTICATED) {
    Fail(std::string(method) + " without the token answered " +
         std::to_string(status.error_code()));
  }
}

// An agent's stream, opened at its first message and cancelled when the input ends.
struct SessionStream {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerEvent>> stream;
  bool open = true;

  void Send(std::string_view bytes) {
    v1::AgentMessage message;
    if (!open || !message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
    if (!stream) {
      context =
          NewContext(true, std::chrono::duration_cast<std::chrono::milliseconds>(kAnswerDeadline));
      stream = server->stub->Session(context.get());
    }
    // false: the server ended the stream (a message it refused); its status is read at Close.
    open = stream->Write(message);
  }

  void Close() {
    if (!stream) return;
    context->TryCancel();
    CheckAnswer("Session", stream->Finish(), /*waits=*/true);
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  // Most inputs are refused as invalid UTF-8 or worse; protobuf logs each refusal, and its lines
  // would bury the one report of a finding that the run's log keeps.
  google::protobuf::SetLogHandler(nullptr);
  server = new Server();
  server->service = std::make_unique<ddprun::RendezvousService>(server->store, kToken,
                                                                ddprun::SteadyTimeSource::Real());
  grpc::ServerBuilder builder;
  builder.RegisterService(server->service.get());
  server->server = builder.BuildAndStart();
  if (!server->server) Fail("the rendezvous service did not start");
  server->stub =
      v1::Rendezvous::NewStub(server->server->InProcessChannel(grpc::ChannelArguments()));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::array<SessionStream, 2> sessions;
  size_t at = 0;
  for (int calls = 0; calls < kMaxCalls && at + 3 <= size; ++calls) {
    const uint8_t operation = data[at];
    const size_t length = std::min<size_t>(data[at + 1] | (data[at + 2] << 8), size - at - 3);
    const std::string_view bytes = ddprun::fuzz::AsText(data + at + 3, length);
    at += 3 + length;
    const bool with_token = (operation & 0x80) == 0;
    using Stub = v1::Rendezvous::Stub;
    switch ((operation & 0x7f) % 9) {
      case 0:
        CallUnary<v1::SetRequest, v1::SetResponse>("Set", bytes, with_token, false, &Stub::Set);
        break;
      case 1:
        CallUnary<v1::GetRequest, v1::GetResponse>("Get", bytes, with_token, false, &Stub::Get);
        break;
      case 2:
        CallUnary<v1::WaitRequest, v1::WaitResponse>("Wait", bytes, with_token, true, &Stub::Wait);
        break;
      case 3:
        CallUnary<v1::AddRequest, v1::AddResponse>("Add", bytes, with_token, false, &Stub::Add);
        break;
      case 4:
        CallUnary<v1::CompareSetRequest, v1::CompareSetResponse>("CompareSet", bytes, with_token,
                                                                 false, &Stub::CompareSet);
        break;
      case 5:
        CallUnary<v1::DeleteRequest, v1::DeleteResponse>("Delete", bytes, with_token, false,
                                                         &Stub::Delete);
        break;
      case 6:
        CallUnary<v1::DescribeJobsRequest, v1::DescribeJobsResponse>(
            "DescribeJobs", bytes, with_token, false, &Stub::DescribeJobs);
        break;
      default:
        sessions[(operation & 0x7f) % 9 - 7].Send(bytes);
        break;
    }
  }
  for (SessionStream& session : sessions) session.Close();
  return 0;
}
