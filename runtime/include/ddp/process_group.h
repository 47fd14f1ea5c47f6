// ddp::ProcessGroup: the ranks of one round of a job, as a worker sees them: its rank and sizes,
// the job's key-value store (scoped to the job and round), and the communicators that run
// collectives among the ranks. Built from the environment ddprun gives its workers
// (FromEnv), or from explicit options for code launched otherwise.
//
// Backends: the CPU ring for CPU tensors; NCCL for CUDA tensors when ddprun was built with NCCL.
// DDPRUN_BACKEND=cpu|nccl overrides the choice. The CPU communicator is connected when the group
// is created (every rank must create it at once); NCCL's when first asked for.
//
// Threads: a group belongs to the thread that created it; its communicators' own contracts say
// which of their calls other threads may make. The store may be used from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "ddp/communicator.h"
#include "ddp/environment.h"
#include "ddp/store.h"
#include "ddprun/base/client_security.h"
#include "ddprun/base/status.h"

namespace ddp {

struct ProcessGroupOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string store_address;        // "host:port" of the rendezvous store
  ddprun::ClientSecurity security;  // its token, and TLS (PEM text, not file names)
  std::string job_id;
  int64_t round = 0;
  std::string host = "127.0.0.1";      // this rank's address, as ranks on other hosts reach it
  std::string backend = "auto";        // "auto", "cpu" or "nccl"
  std::string cpu_transport = "auto";  // "auto" (shared memory on one host) or "tcp"
  std::chrono::milliseconds timeout{600'000};  // per collective, and to connect (PyTorch's 10 min)
  // How long store calls keep retrying while the rendezvous server is unreachable (it may be
  // restarting under a running job).
  std::chrono::milliseconds store_retry{60'000};
};

class ProcessGroup {
 public:
  // Reads the environment (ddp::Environment::FromProcess) and connects. INVALID_ARGUMENT naming
  // a missing or malformed variable or an unreadable TLS file; UNAVAILABLE naming the store or
  // peer that cannot be reached.
  static ddprun::Result<std::unique_ptr<ProcessGroup>> FromEnv();
  // Connects to the rendezvous store `options` names, then the CPU ring (unless the backend is
  // nccl). Blocks until every rank has joined or options.timeout passes.
  static ddprun::Result<std::unique_ptr<ProcessGroup>> Create(const ProcessGroupOptions& options);
  // The same over a store of the caller's (an InMemoryStore shared by ranks that are threads);
  // options.store_address and options.security are not used.
  static ddprun::Result<std::unique_ptr<ProcessGroup>> Create(const ProcessGroupOptions& options,
                                                              std::shared_ptr<Store> store);
  ~ProcessGroup();

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  int local_rank() const { return options_.local_rank; }
  int local_world_size() const { return options_.local_world_size; }
  // The job's store, scoped to this round.
  Store& store() { return *store_; }

  // The communicator for tensors on `device`: the CPU ring, or NCCL for CUDA (created on first
  // use, by every rank, on the GPU numbered by the local rank, which becomes the calling thread's
  // current device: arrays made afterwards land there). FAILED_PRECONDITION when no backend
  // serves that device here.
  ddprun::Result<Communicator*> communicator(Device device = Device::kCpu);

 private:
  explicit ProcessGroup(ProcessGroupOptions options) : options_(std::move(options)) {}

  ProcessGroupOptions options_;
  std::shared_ptr<Store> store_;
  std::unique_ptr<Communicator> cpu_;
  std::unique_ptr<Communicator> cuda_;
};

// The options FromEnv uses: `environment` plus the runtime's knobs, each optional:
//   DDPRUN_BACKEND        auto | cpu | nccl                         (auto)
//   DDPRUN_CPU_TRANSPORT  auto (shared memory on one host) | tcp   (auto)
//   DDPRUN_TIMEOUT        seconds per collective and to connect    (600)
//   DDPRUN_STORE_RETRY    seconds store calls retry an unreachable server (60)
//   DDPRUN_NODE_ADDR      this node's address (ddprun sets it)     (127.0.0.1)
// and the PEM text of the TLS files `environment` names. INVALID_ARGUMENT naming a malformed
// value or a TLS file that cannot be read.
ddprun::Result<ProcessGroupOptions> OptionsFromEnvironment(const Environment& environment);

}  // namespace ddp
