// OutputRouter; see worker_output_routing.h.
#include "ddprun/agent/worker_output_routing.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <tuple>

#include "ddprun/agent/log_line_prefix.h"
#include "ddprun/base/logging.h"

namespace ddprun {

OutputRouter::OutputRouter(boost::asio::io_context& io, OutputRoutingOptions options)
    : io_(io), options_(std::move(options)) {
  std::tie(console_stdout_, console_stderr_) =
      SharedConsole::For(options_.console_stdout, options_.console_stderr);
}

WorkerOutput OutputRouter::Route(int local_rank, int global_rank, const SpawnedWorker& spawned,
                                 const SpawnOptions& spawned_as, const std::string& stdout_log,
                                 const std::string& stderr_log) {
  const std::string prefix =
      LogLinePrefix(options_.line_prefix_template, global_rank, local_rank, options_.role);
  return {Pump(local_rank, StdStreams::kStdout, spawned.stdout_fd,
               spawned_as.stdout_channel == OutputChannel::kTerminal, prefix, stdout_log),
          Pump(local_rank, StdStreams::kStderr, spawned.stderr_fd,
               spawned_as.stderr_channel == OutputChannel::kTerminal, prefix, stderr_log)};
}

bool OutputRouter::ReachesConsole(int local_rank, StdStreams stream) const {
  const bool shown =
      !options_.local_ranks_filter || options_.local_ranks_filter->contains(local_rank);
  // As torchrun's: --tee shows a stream that --redirects also names.
  const bool to_file_only = Includes(options_.redirects.For(local_rank), stream) &&
                            !Includes(options_.tee.For(local_rank), stream);
  return shown && !to_file_only;
}

OutputChannel OutputRouter::ChannelFor(int local_rank, StdStreams stream,
                                       OutputChannel console_channel) const {
  if (console_channel == OutputChannel::kTerminal && !ReachesConsole(local_rank, stream)) {
    return OutputChannel::kPipe;
  }
  return console_channel;
}

std::shared_ptr<OutputPump> OutputRouter::Pump(int local_rank, StdStreams stream, int fd,
                                               bool terminal, const std::string& prefix,
                                               const std::string& log_file) {
  const bool to_file = Includes(options_.redirects.For(local_rank), stream) ||
                       Includes(options_.tee.For(local_rank), stream);
  int file_fd = -1;
  if (to_file) {
    file_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (file_fd < 0) {
      GetLogger("agent")->error("cannot open {}: {}; {}output goes to the console only", log_file,
                                std::strerror(errno), prefix);
    }
  }
  const bool console = ReachesConsole(local_rank, stream) || (to_file && file_fd < 0);
  const int console_fd =
      stream == StdStreams::kStdout ? options_.console_stdout : options_.console_stderr;
  auto pump = std::make_shared<OutputPump>(
      io_, fd, terminal, stream == StdStreams::kStdout ? console_stdout_ : console_stderr_,
      console ? console_fd : -1, prefix, file_fd);
  pump->Start();
  return pump;
}

}  // namespace ddprun
