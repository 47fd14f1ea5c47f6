// CpuCommunicator: the CPU backend. One thread runs the collectives in the order they were
// issued, over the ring links (shared memory to a rank on this host, TCP to one on another); a
// second thread sends (SendQueue). Collectives on registered buffers (AllocateShared, when every
// rank is on this host) skip the ring: they read the peers' memory directly (direct/). Any failure
// breaks the communicator: its links are closed, so the neighbours fail at once too, and every
// pending and later operation returns the first error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "ddp/communicator.h"
#include "ddp/store.h"
#include "ddprun/base/thread_annotations.h"
#include "direct/registered_buffers.h"
#include "ring.h"
#include "send_queue.h"
#include "transport/ring_links.h"

namespace ddp::cpu {

struct CpuCommunicatorOptions {
  RingLinkOptions ring;
  std::chrono::milliseconds timeout{600'000};  // per collective, and to connect the ring
};

class CpuCommunicator final : public Communicator {
 public:
  // Connects the ring through `store` (every rank at once); errors say which peer failed.
  static ddprun::Result<std::unique_ptr<CpuCommunicator>> Connect(
      Store& store, const CpuCommunicatorOptions& options);
  ~CpuCommunicator() override;  // fails what is still queued, closes the links, joins threads

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string backend_name() const override { return "cpu"; }
  // The transport to the next rank: "shm", "tcp", or "none" (one rank).
  std::string transport_to_next() const;

  std::shared_ptr<Work> AllReduceAsync(TensorView tensor, ReduceOp op) override;
  std::shared_ptr<Work> BroadcastAsync(TensorView tensor, int root) override;
  std::shared_ptr<Work> AllGatherAsync(TensorView input, TensorView output) override;
  std::shared_ptr<Work> ReduceScatterAsync(TensorView input, TensorView output,
                                           ReduceOp op) override;
  std::shared_ptr<Work> BarrierAsync() override;
  ddprun::Result<std::shared_ptr<RegisteredBuffer>> AllocateShared(size_t bytes) override;

 private:
  using Run = std::function<ddprun::Status(const RingContext& ring)>;
  struct Operation {
    std::string description;  // "all_reduce of 1024 float32 (4.0 KiB)"
    Run run;
    std::shared_ptr<Work> work;
    const SymmetricBuffer* direct_on = nullptr;  // the registered buffer it reads directly
  };

  CpuCommunicator(int rank, int world_size, RingLinks links, std::chrono::milliseconds timeout);
  std::shared_ptr<Work> Enqueue(std::string description, Run run,
                                const SymmetricBuffer* direct_on = nullptr);
  // A collective that reads the registered buffer `found` directly: run(buffer, offset of the
  // tensor, deadline).
  using DirectRun = std::function<ddprun::Status(SymmetricBuffer&, size_t, Deadline)>;
  std::shared_ptr<Work> EnqueueDirect(const std::string& description,
                                      RegisteredBuffers::Found found, DirectRun run);
  void Loop();
  // Records the first error and closes the links, which fails the neighbours' operations too.
  void Break(const ddprun::Status& error);

  const int rank_;
  const int world_size_;
  const std::chrono::milliseconds timeout_;
  RingLinks links_;
  std::unique_ptr<SendQueue> sender_;
  std::vector<std::byte> barrier_scratch_;  // used on the loop thread only
  uint64_t collectives_run_ = 0;            // by the loop thread, every rank's alike
  RegisteredBuffers registered_;

  ddprun::Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Operation> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  ddprun::Status broken_ GUARDED_BY(mu_);  // the first error
  std::thread loop_;
};

}  // namespace ddp::cpu
