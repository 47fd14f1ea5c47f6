// TorchStoreServer; see torch_store_server.h.
#include "ddprun/agent/torch_store_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <map>
#include <string>

#include "ddprun/base/logging.h"
#include "ddprun/base/torch_store.h"

namespace ddprun {

using boost::asio::ip::tcp;

namespace {

struct Connection {
  explicit Connection(tcp::socket accepted) : socket(std::move(accepted)) {}
  tcp::socket socket;
  std::array<char, 64 * 1024> buffer;
  std::deque<std::string> unsent;  // the front one being written
};

}  // namespace

struct TorchStoreServer::State : std::enable_shared_from_this<TorchStoreServer::State> {
  explicit State(boost::asio::io_context& io) : acceptor(io) {}

  tcp::acceptor acceptor;
  TorchStore store;
  std::map<TorchStore::ConnectionId, std::shared_ptr<Connection>> connections;
  TorchStore::ConnectionId next_id = 1;

  void Accept() {
    acceptor.async_accept(
        [weak = weak_from_this()](const boost::system::error_code& error, tcp::socket socket) {
          auto self = weak.lock();
          if (!self || error == boost::asio::error::operation_aborted) return;
          if (!error) {
            // Never a worker's: asio accepts without close-on-exec, and workers are started
            // on this thread, so none is forked between the accept and this.
            ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
            boost::system::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
            const TorchStore::ConnectionId id = self->next_id++;
            auto connection = std::make_shared<Connection>(std::move(socket));
            self->connections[id] = connection;
            self->Read(id, connection);
          }
          self->Accept();  // a failed accept (EMFILE, a reset) ends that one only
        });
  }

  void Read(TorchStore::ConnectionId id, const std::shared_ptr<Connection>& connection) {
    connection->socket.async_read_some(
        boost::asio::buffer(connection->buffer),
        [weak = weak_from_this(), id, connection](const boost::system::error_code& error,
                                                  size_t size) {
          auto self = weak.lock();
          if (!self) return;
          if (error) {
            self->Drop(id);
            return;
          }
          TorchStore::Outcome outcome =
              self->store.Receive(id, std::string_view(connection->buffer.data(), size));
          for (auto& answer : outcome.answers) {
            self->Send(answer.connection, std::move(answer.bytes));
          }
          if (outcome.close) {
            GetLogger("agent")->debug("the PyTorch store closes a connection: {}", outcome.why);
            self->Drop(id);
            return;
          }
          self->Read(id, connection);
        });
  }

  void Send(TorchStore::ConnectionId id, std::string bytes) {
    auto found = connections.find(id);
    if (found == connections.end()) return;
    const auto& connection = found->second;
    connection->unsent.push_back(std::move(bytes));
    if (connection->unsent.size() == 1) WriteFront(id, connection);
  }

  void WriteFront(TorchStore::ConnectionId id, const std::shared_ptr<Connection>& connection) {
    boost::asio::async_write(
        connection->socket, boost::asio::buffer(connection->unsent.front()),
        [weak = weak_from_this(), id, connection](const boost::system::error_code& error, size_t) {
          auto self = weak.lock();
          if (!self) return;
          if (error) {
            self->Drop(id);
            return;
          }
          connection->unsent.pop_front();
          if (!connection->unsent.empty()) self->WriteFront(id, connection);
        });
  }

  void CloseConnections() {
    boost::system::error_code ignored;
    for (auto& [id, connection] : connections) {
      connection->socket.close(ignored);
      store.Closed(id);
    }
    connections.clear();
  }

  void Drop(TorchStore::ConnectionId id) {
    auto found = connections.find(id);
    if (found == connections.end()) return;
    boost::system::error_code ignored;
    found->second->socket.close(ignored);
    connections.erase(found);
    store.Closed(id);
  }
};

Result<std::unique_ptr<TorchStoreServer>> TorchStoreServer::Start(boost::asio::io_context& io,
                                                                  BoundSocket socket) {
  if (Status listening = socket.Listen(); !listening.ok()) return listening;
  auto state = std::make_shared<State>(io);
  const int port = socket.port();
  // The acceptor owns a copy of its own, close-on-exec as `socket`'s is; `socket` closes the other.
  const int fd = ::fcntl(socket.fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("serving the PyTorch store", errno);
  boost::system::error_code error;
  state->acceptor.assign(tcp::v4(), fd, error);
  if (error) {
    ::close(fd);
    return UnavailableError("serving the PyTorch store on port " + std::to_string(port) + ": " +
                            error.message());
  }
  state->Accept();
  return std::unique_ptr<TorchStoreServer>(new TorchStoreServer(std::move(state), port));
}

TorchStoreServer::~TorchStoreServer() { Stop(); }

void TorchStoreServer::Stop() {
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
  state_->CloseConnections();
}

void TorchStoreServer::StartAfresh() {
  state_->CloseConnections();
  state_->store.Clear();
}

}  // namespace ddprun
