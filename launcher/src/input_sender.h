// InputSender: the submitter's stdin (a terminal, a pipe or a socket) for a job on many hosts,
// as one node's agent forwards it to global rank 0: it goes to every host's daemon (an Input
// stream each), whose agent passes it on to rank 0 if it runs there. At the end of the input the
// streams end and the agents see end of file.
//
// Each host has a queue of its own, bounded (kHostQueueBytes): a host that does not take its
// input (its agent holds it while it runs no rank 0) never holds the others up; what overflows
// its queue is dropped for that host (logged at debug level), so input that rank 0 leaves unread
// beyond that is lost, where one node would wait for it. In the background of its terminal the
// read fails (SIGTTIN is ignored) and is tried again every 500 ms, as on one node.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ddprun/base/client_security.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/job_client.h"

namespace ddprun {

class InputSender {
 public:
  static constexpr size_t kHostQueueBytes = 1 << 20;

  // Starts reading stdin. `line_entered` runs, on the reading thread, for each line read from a
  // terminal (which echoed it).
  InputSender(std::string job_id, const std::vector<std::string>& hosts,
              const ClientSecurity& security, std::function<void()> line_entered);
  // Stops reading and ends every stream at once: the job has ended.
  ~InputSender();
  InputSender(const InputSender&) = delete;
  InputSender& operator=(const InputSender&) = delete;

 private:
  struct Host {
    std::unique_ptr<JobClient> client;
    Mutex mu;
    std::condition_variable_any changed;
    std::deque<std::string> queue GUARDED_BY(mu);
    size_t queued_bytes GUARDED_BY(mu) = 0;
    bool ended GUARDED_BY(mu) = false;  // no more input will come
    bool overflowed GUARDED_BY(mu) = false;
    std::thread sender;
  };
  void ReadLoop();
  // Queues `data` for every host whose queue has room.
  void Offer(const std::string& data);
  void EndInput();

  const std::string job_id_;
  std::function<void()> line_entered_;
  std::vector<std::unique_ptr<Host>> hosts_;
  int stop_fd_ = -1;  // an eventfd: the destructor ends the read loop through it
  std::thread reader_;
};

}  // namespace ddprun
