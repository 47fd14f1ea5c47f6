// TorchStoreServer: serves a TorchStore (ddprun/base/torch_store.h) to PyTorch's TCPStore
// clients on a listening socket, on the caller's io_context: each connection's bytes go to the
// store as they come, and its answers back in order. A connection that sends what no client
// sends is closed, with one line at debug level; the others go on.
//
// Not thread-safe: its io_context's thread only. Stop (or destroying it) closes the listener and
// every connection, so that nothing of it waits on the loop any more; handlers still queued then
// find it stopped or gone and do nothing.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "ddprun/base/bound_socket.h"
#include "ddprun/base/status.h"

namespace ddprun {

class TorchStoreServer {
 public:
  // Listens on `socket` (bound, not listening yet) and serves from now on.
  static Result<std::unique_ptr<TorchStoreServer>> Start(boost::asio::io_context& io,
                                                         BoundSocket socket);
  ~TorchStoreServer();
  TorchStoreServer(const TorchStoreServer&) = delete;
  TorchStoreServer& operator=(const TorchStoreServer&) = delete;

  // A new attempt: every key is forgotten (TorchStore::Clear) and every connection closed, so
  // that a worker of the last attempt still running on another node, about to be stopped there,
  // writes nothing the next attempt's workers read. The listener stays open.
  void StartAfresh();
  // No more connections: the listener and every open one are closed. Idempotent.
  void Stop();
  int port() const { return port_; }

  struct State;  // torch_store_server.cc

 private:
  TorchStoreServer(std::shared_ptr<State> state, int port)
      : state_(std::move(state)), port_(port) {}
  std::shared_ptr<State> state_;
  int port_;
};

}  // namespace ddprun
