// The real gRPC rendezvous server on loopback, reached by the real StoreClient.
#include <catch2/catch.hpp>
#include <thread>

#include "ddprun/rendezvous/rendezvous_server.h"
#include "ddprun/rendezvous/store_client.h"

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

// Every case runs against both server modes: gRPC listening by itself, and the embedded mode
// that accepts connections and starts gRPC on the first one.
struct ServerFixture {
  explicit ServerFixture(bool start_on_first_connection) {
    RendezvousServerOptions options;
    options.start_on_first_connection = start_on_first_connection;
    options.token = "sesame";
    options.limits.max_value_bytes = 1024;
    auto started = RendezvousServer::Start(options);
    REQUIRE(started.ok());
    server = std::move(started).value();
  }
  std::unique_ptr<StoreClient> Client(int64_t round = 0, std::string token = "sesame") {
    StoreClientOptions options;
    options.address = server->address();
    options.security.token = std::move(token);
    options.job_id = "job";
    options.round = round;
    options.rpc_timeout = 10s;
    return StoreClient::Connect(options);
  }
  // Waits, bounded, until the server holds `count` pending waits.
  bool WaitForPendingWaits(size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (server->store().pending_waiters() < count) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }

  std::unique_ptr<RendezvousServer> server;
};

}  // namespace

TEST_CASE("the server binds 127.0.0.1 on a port of its own") {
  ServerFixture fixture(GENERATE(false, true));
  CHECK(fixture.server->port() > 0);
  CHECK(fixture.server->address() == "127.0.0.1:" + std::to_string(fixture.server->port()));
}

TEST_CASE("set, get, add, compare_set and delete over gRPC") {
  ServerFixture fixture(GENERATE(false, true));
  auto client = fixture.Client();
  REQUIRE(client->Set("k", std::string("bytes\0with nul", 14)).ok());
  CHECK(client->Get("k").value() == std::string("bytes\0with nul", 14));
  CHECK(client->Get("nope").status().code() == StatusCode::kNotFound);
  CHECK(client->Add("n", 5).value() == 5);
  CHECK(client->Add("n", 1).value() == 6);
  CHECK(client->CompareSet("c", "", "1")->swapped);
  CHECK_FALSE(client->CompareSet("c", "0", "2")->swapped);
  CHECK(client->Delete("c").value());
  CHECK_FALSE(client->Delete("c").value());
}

TEST_CASE("a wait blocks until another client sets the key") {
  ServerFixture fixture(GENERATE(false, true));
  auto waiter = fixture.Client();
  auto setter = fixture.Client();
  Status waited;
  std::thread waiting([&] { waited = waiter->Wait({"go"}, 30s); });
  // The setter waits until the waiter is registered on the server, so the test covers a wait
  // that is pending when the key arrives.
  REQUIRE(fixture.WaitForPendingWaits(1));
  REQUIRE(setter->Set("go", "now").ok());
  waiting.join();
  CHECK(waited.ok());
}

TEST_CASE("many concurrent waits are all released by one set") {
  ServerFixture fixture(GENERATE(false, true));
  constexpr int kWaiters = 16;
  std::vector<std::thread> threads;
  std::atomic<int> released{0};
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&] {
      if (fixture.Client()->Wait({"barrier"}, 30s).ok()) ++released;
    });
  }
  REQUIRE(fixture.WaitForPendingWaits(kWaiters));
  REQUIRE(fixture.Client()->Set("barrier", "open").ok());
  for (auto& t : threads) t.join();
  CHECK(released == kWaiters);
}

TEST_CASE("a wait times out with DEADLINE_EXCEEDED and leaves no waiter behind") {
  ServerFixture fixture(GENERATE(false, true));
  auto status = fixture.Client()->Wait({"never"}, 20ms);
  CHECK(status.code() == StatusCode::kDeadlineExceeded);
  CHECK(status.message().find("timed out") != std::string::npos);
  CHECK(fixture.server->store().pending_waiters() == 0);
}

TEST_CASE("rounds do not see each other's keys") {
  ServerFixture fixture(GENERATE(false, true));
  REQUIRE(fixture.Client(0)->Set("id", "round0").ok());
  CHECK(fixture.Client(1)->Get("id").status().code() == StatusCode::kNotFound);
}

TEST_CASE("a missing or wrong token is UNAUTHENTICATED") {
  ServerFixture fixture(GENERATE(false, true));
  CHECK(fixture.Client(0, "")->Set("k", "v").code() == StatusCode::kUnauthenticated);
  auto wrong = fixture.Client(0, "guess")->Get("k");
  CHECK(wrong.status().code() == StatusCode::kUnauthenticated);
  CHECK(fixture.Client(0, "guess")->Wait({"k"}, 1s).code() == StatusCode::kUnauthenticated);
}

TEST_CASE("malformed requests get clear errors") {
  ServerFixture fixture(GENERATE(false, true));
  auto client = fixture.Client();
  CHECK(client->Set("", "v").code() == StatusCode::kInvalidArgument);
  CHECK(client->Set("big", std::string(2048, 'x')).code() == StatusCode::kResourceExhausted);
  CHECK(client->Wait({}, 1s).code() == StatusCode::kInvalidArgument);
  CHECK(client->Wait({"k"}, 0ms).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a server that is gone is UNAVAILABLE, with the address in the message") {
  std::string address;
  {
    ServerFixture fixture(GENERATE(false, true));
    address = fixture.server->address();
  }
  StoreClientOptions options;
  options.address = address;
  options.job_id = "job";
  options.rpc_timeout = 2s;
  auto status = StoreClient::Connect(options)->Set("k", "v");
  CHECK_FALSE(status.ok());
  CHECK(status.message().find(address) != std::string::npos);
}
