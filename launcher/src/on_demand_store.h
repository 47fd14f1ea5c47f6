// OnDemandStore: a single node's job store, started when a worker first uses it. `ddprun`
// listens on 127.0.0.1 itself, so the store's address is the job's from the start; the first
// connection starts the store's helper (the network launcher, network_launcher.h, in its store
// mode), which takes the listening socket over and serves the store with gRPC until the run
// ends. A job whose workers never use the store starts no helper, and `ddprun` itself links no
// gRPC: its start-up is a small program's.
//
// The helper is this process's child, in a process group of its own (a terminal's Ctrl-C stops
// the workers, not the store they may still need), outside the job's cgroup, and killed with
// this process (parent-death signal). Should it end during the run, the next connection starts
// it again (what it held is lost; a restarted round sets its keys anew). Finish kills it and
// waits for it.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <memory>
#include <optional>
#include <string>

#include "ddprun/base/bound_socket.h"
#include "node_setup.h"

namespace ddprun {

class OnDemandStore final : public NodeServices {
 public:
  // Listens on 127.0.0.1 (a free port) and waits on `io` for the first connection, then starts
  // the helper with the socket and `token`. UNAVAILABLE when no port can be had.
  static Result<std::unique_ptr<OnDemandStore>> Listen(boost::asio::io_context& io,
                                                       std::string token);
  ~OnDemandStore() override;

  std::string address() const;

  void Finish(bool interrupted) override;
  void StopWatching() override;
  std::vector<pid_t> Children() const override;

 private:
  OnDemandStore(boost::asio::io_context& io, BoundSocket listener, std::string token);
  void WatchForFirstConnection();
  void StartHelper();
  void WatchHelperExit();
  void StopHelper();

  // Open to the end (the port stays the job's even if the helper dies), unless the helper could
  // not start: then closed, so that connecting fails at once.
  std::optional<BoundSocket> listener_;
  int port_ = 0;
  boost::asio::posix::stream_descriptor watch_;  // the listener, as the event loop waits on it
  std::string token_;
  pid_t helper_pid_ = -1;
  boost::asio::posix::stream_descriptor helper_exit_;  // the helper's pidfd, readable at its exit
};

}  // namespace ddprun
