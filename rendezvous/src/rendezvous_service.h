// RendezvousService: the gRPC callback-API adapter over KeyValueStore. It authenticates each
// call, converts messages, and owns the deadlines of pending waits (one timer thread).
// It holds no rendezvous logic of its own.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <thread>

#include "ddprun/rendezvous/key_value_store.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"

namespace ddprun {

class RendezvousService final : public v1::Rendezvous::CallbackService {
 public:
  // `token` empty: calls are not authenticated.
  RendezvousService(KeyValueStore& store, std::string token);
  ~RendezvousService() override;

  grpc::ServerUnaryReactor* Set(grpc::CallbackServerContext* context, const v1::SetRequest* request,
                                v1::SetResponse* response) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context, const v1::GetRequest* request,
                                v1::GetResponse* response) override;
  grpc::ServerUnaryReactor* Wait(grpc::CallbackServerContext* context,
                                 const v1::WaitRequest* request,
                                 v1::WaitResponse* response) override;
  grpc::ServerUnaryReactor* Add(grpc::CallbackServerContext* context, const v1::AddRequest* request,
                                v1::AddResponse* response) override;
  grpc::ServerUnaryReactor* CompareSet(grpc::CallbackServerContext* context,
                                       const v1::CompareSetRequest* request,
                                       v1::CompareSetResponse* response) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context,
                                   const v1::DeleteRequest* request,
                                   v1::DeleteResponse* response) override;

 private:
  class WaitReactor;

  // OK, or UNAUTHENTICATED (logged) when the call lacks the server's token.
  grpc::Status Authenticate(grpc::CallbackServerContext* context) const;

  KeyValueStore& store_;
  const std::string token_;
  boost::asio::io_context timers_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> timers_work_;
  std::thread timer_thread_;
};

}  // namespace ddprun
