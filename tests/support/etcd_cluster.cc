// EtcdCluster; see etcd_cluster.h.
#include "support/etcd_cluster.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>

#include "support/own_loopback_address.h"
#include "support/timing_profile.h"

namespace ddprun::testing {
namespace {

// Member `index` (0-2) of this process: slots 1-3 (slot 0 is Prometheus's, metrics_test.cc).
std::string MemberAddress(int index) { return OwnLoopbackAddress(index + 1); }

std::chrono::milliseconds Stretched(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * Stretch() * 1000));
}

std::vector<EtcdCluster::Place> OnOwnLoopbackAddresses(int members) {
  REQUIRE(members >= 1);
  REQUIRE(members <= 3);
  std::vector<EtcdCluster::Place> places;
  for (int i = 0; i < members; ++i) places.push_back({.address = MemberAddress(i), .prefix = {}});
  return places;
}

}  // namespace

std::string EtcdCluster::EtcdProgram() {
  return ::access("/usr/bin/etcd", X_OK) == 0 ? "/usr/bin/etcd" : "";
}

EtcdCluster::EtcdCluster(int members) : EtcdCluster(OnOwnLoopbackAddresses(members)) {}

EtcdCluster::EtcdCluster(std::vector<Place> places) {
  for (size_t i = 0; i < places.size(); ++i) {
    members_.push_back({.name = "m" + std::to_string(i),
                        .address = places[i].address,
                        .prefix = places[i].prefix,
                        .process = {}});
    initial_cluster_ +=
        (i == 0 ? "" : ",") + members_.back().name + "=http://" + members_.back().address + ":2380";
  }
  for (int i = 0; i < size(); ++i) Start(i, "new");
  for (int i = 0; i < size(); ++i) WaitReady(i);
}

EtcdCluster::~EtcdCluster() {
  for (auto& member : members_) member.process.reset();  // SIGKILL and reap
}

std::string EtcdCluster::ClientEndpoint(int i) const {
  return members_[static_cast<size_t>(i)].address + ":2379";
}

std::vector<std::string> EtcdCluster::ClientEndpoints() const {
  std::vector<std::string> endpoints;
  for (int i = 0; i < size(); ++i) endpoints.push_back(ClientEndpoint(i));
  return endpoints;
}

std::string EtcdCluster::EndpointList() const {
  std::string list;
  for (const std::string& endpoint : ClientEndpoints())
    list += (list.empty() ? "" : ",") + endpoint;
  return list;
}

std::unique_ptr<etcd::EtcdClient> EtcdCluster::OpenClient() const {
  auto client = etcd::EtcdClient::Open({.endpoints = ClientEndpoints()});
  REQUIRE(client.ok());
  return std::move(client).value();
}

v1::JobRecord EtcdCluster::JobRecordOf(const std::string& job) const {
  auto read = OpenClient()->Get("/ddprun/jobs/" + job + "/state");
  REQUIRE(read.ok());
  v1::JobRecord record;
  if (read->has_value()) REQUIRE(record.ParseFromString((*read)->value));
  return record;
}

size_t EtcdCluster::JobKeyCount(const std::string& job) const {
  auto keys = OpenClient()->GetPrefix("/ddprun/jobs/" + job + "/");
  REQUIRE(keys.ok());
  return keys->kvs.size();
}

void EtcdCluster::Start(int i, const std::string& state) {
  Member& member = members_[static_cast<size_t>(i)];
  const std::string client = "http://" + member.address + ":2379";
  const std::string peer = "http://" + member.address + ":2380";
  // Through setpriv, so that a member gets SIGKILL when this test dies without its destructor
  // (a crash, an abort under a sanitizer): no member outlives its test and holds its address.
  std::vector<std::string> argv = member.prefix;
  argv.insert(argv.end(), {"/usr/bin/setpriv", "--pdeathsig", "KILL", "--", EtcdProgram()});
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"--name", member.name},
      {"--data-dir", dir_ / member.name},
      {"--listen-client-urls", client},
      {"--advertise-client-urls", client},
      {"--listen-peer-urls", peer},
      {"--initial-advertise-peer-urls", peer},
      {"--initial-cluster", initial_cluster_},
      {"--initial-cluster-state", state},
      {"--initial-cluster-token", dir_.path()},
      {"--heartbeat-interval", "50"},
      {"--election-timeout", "500"},
      {"--logger", "zap"},
      {"--log-outputs", "stdout"}};
  for (const auto& [flag, value] : flags) argv.push_back(flag + "=" + value);
  member.process = std::make_unique<ChildProcess>(argv);
}

void EtcdCluster::WaitReady(int i) {
  Member& member = members_[static_cast<size_t>(i)];
  REQUIRE(member.process != nullptr);
  const auto ready = member.process->WaitForStdoutLine(
      [](const std::string& line) {
        return line.find("serving client traffic") != std::string::npos;
      },
      Stretched(30));
  INFO("etcd member " << member.name << " at " << member.address << ":\n"
                      << member.process->stdout_text() << member.process->stderr_text());
  REQUIRE(ready.has_value());
}

void EtcdCluster::Kill(int i) {
  Member& member = members_[static_cast<size_t>(i)];
  REQUIRE(member.process != nullptr);
  member.process->Signal(SIGKILL);
  REQUIRE(member.process->Wait(Stretched(10)).has_value());
  member.process.reset();
}

void EtcdCluster::Restart(int i, bool wait) {
  Start(i, "existing");
  if (wait) WaitReady(i);
}

}  // namespace ddprun::testing
