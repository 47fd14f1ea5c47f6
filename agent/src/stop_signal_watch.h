// StopSignalWatch: the signals that stop an agent (SIGINT, SIGTERM, SIGHUP, SIGQUIT) as this
// process receives them, told on its event loop like an asio signal_set, and also asked for at
// once: Take() hands over one that has arrived but not yet been told. The supervisor asks before
// it acts on news from elsewhere (the rendezvous, a worker's exit), so that a signal the process
// got first is carried out first, whatever order the loop would have run the two in. (With a
// signal_set, a notice another thread posted while the loop's thread waited for a core ran ahead
// of a SIGTERM that came before it: two agents stopped together, one of them said "restarting the
// workers: node left" before "received SIGTERM".)
//
// One at a time in a process: its handler is the process's for those signals while it lives; the
// dispositions before it come back when it is destroyed. The loop's thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>
#include <optional>

#include "ddprun/base/status.h"

namespace ddprun {

class StopSignalWatch {
 public:
  // INTERNAL when a second one is made, or when the pipe or a handler cannot be had.
  static Result<std::unique_ptr<StopSignalWatch>> Start(boost::asio::io_context& io);
  ~StopSignalWatch();
  StopSignalWatch(const StopSignalWatch&) = delete;
  StopSignalWatch& operator=(const StopSignalWatch&) = delete;

  // Calls `on_signal` on the loop with the next signal, unless Take hands it over first; one wait
  // at a time. Cancel ends it uncalled. The watch must outlive the loop's run.
  void AsyncWait(std::function<void(int signal_number)> on_signal);
  void Cancel();
  // The earliest signal received and not yet told or taken; nullopt when none.
  std::optional<int> Take();

 private:
  StopSignalWatch(boost::asio::io_context& io, int read_fd);
  void Tell(const std::function<void(int)>& on_signal);

  boost::asio::posix::stream_descriptor received_;  // the read end of the handler's pipe
  bool waiting_ = false;
};

}  // namespace ddprun
