// EtcdCluster: real etcd members (Debian's etcd-server, /usr/bin/etcd) for a test. Each member
// listens on a loopback address of its own (own_loopback_address.h, slots 1-3), at etcd's usual
// ports 2379 (clients) and 2380 (peers): no two running tests share an address, and no port is
// probed and handed on. Members keep their data in a scratch directory, log to stdout, and
// are ready when their log says they serve clients (after joining a quorum); elections are quick
// (50 ms heartbeats, 500 ms election timeout). Every member still running is killed with the
// object. A member may instead run in a place of the test's choosing: at an address of a network
// namespace, under that namespace's `ip netns exec`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ddprun/etcd/etcd_client.h"
#include "ddprun/v1/job_record.pb.h"
#include "support/child_process.h"

namespace ddprun::testing {

class EtcdCluster {
 public:
  // The path of Debian's etcd; "" when it is not installed (the caller skips with
  // kNotInstalled).
  static std::string EtcdProgram();
  static constexpr char kNotInstalled[] =
      "no /usr/bin/etcd (Debian's etcd-server; ./run.sh test installs it)";

  // Where a member runs: its address, and the command it runs under.
  struct Place {
    std::string address;
    std::vector<std::string> prefix;
  };

  // Starts `members` members as one new cluster and waits until each serves clients.
  explicit EtcdCluster(int members);
  // The same, one member at each place.
  explicit EtcdCluster(std::vector<Place> places);
  ~EtcdCluster();

  int size() const { return static_cast<int>(members_.size()); }
  // "127.A.B.C:2379" of member i.
  std::string ClientEndpoint(int i) const;
  // Every member's, in order.
  std::vector<std::string> ClientEndpoints() const;
  // "h1:2379,h2:2379,..." for flags and settings.
  std::string EndpointList() const;

  // A client of every member, in order.
  std::unique_ptr<etcd::EtcdClient> OpenClient() const;
  // The record the server leading job `job` left under the default prefix (an empty one when
  // there is none): docs/control_plane.md, "The layout in etcd".
  v1::JobRecord JobRecordOf(const std::string& job) const;
  // How many keys job `job` has under the default prefix.
  size_t JobKeyCount(const std::string& job) const;

  // kill -9 of member i, then waits for it to be gone.
  void Kill(int i);
  // Starts member i again on its data (it rejoins the cluster); waits until it is ready, which
  // needs a quorum: with too few members up, call it for each before waiting on any
  // (`wait` false), then WaitReady.
  void Restart(int i, bool wait = true);
  void WaitReady(int i);
  bool running(int i) const { return members_[static_cast<size_t>(i)].process != nullptr; }

 private:
  struct Member {
    std::string name;
    std::string address;
    std::vector<std::string> prefix;
    std::unique_ptr<ChildProcess> process;
  };
  void Start(int i, const std::string& state);

  ScratchDir dir_;
  std::vector<Member> members_;
  std::string initial_cluster_;
};

}  // namespace ddprun::testing
