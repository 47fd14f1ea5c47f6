// CreateCommunicator; see communicator_factory.h.
#include "comm/communicator_factory.h"

#include "comm/cpu/cpu_communicator.h"
#include "ddprun/base/status_macros.h"
#if DDPRUN_HAVE_NCCL
#include "comm/nccl/nccl_communicator.h"
#endif

namespace ddp {

bool NcclBuiltIn() {
#if DDPRUN_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

ddprun::Result<std::unique_ptr<Communicator>> CreateCommunicator(const ProcessGroupOptions& options,
                                                                 Store& store, Device device) {
  const bool want_nccl =
      options.backend == "nccl" || (options.backend == "auto" && device == Device::kCuda);
  if (want_nccl) {
    if (device != Device::kCuda) {
      return ddprun::FailedPreconditionError(
          "DDPRUN_BACKEND=nccl, but NCCL takes tensors on a GPU; use cpu (or auto) for CPU "
          "tensors");
    }
#if DDPRUN_HAVE_NCCL
    nccl::NcclCommunicatorOptions nccl_options;
    nccl_options.rank = options.rank;
    nccl_options.world_size = options.world_size;
    nccl_options.device = options.local_rank;
    nccl_options.timeout = options.timeout;
    ASSIGN_OR_RETURN(auto nccl, nccl::NcclCommunicator::Connect(store, nccl_options));
    return std::unique_ptr<Communicator>(std::move(nccl));
#else
    return ddprun::FailedPreconditionError(
        "tensors on a GPU need the NCCL backend, and this build of ddprun has none (rebuild with "
        "CUDA and NCCL found)");
#endif
  }
  if (device != Device::kCpu) {
    return ddprun::FailedPreconditionError(
        "DDPRUN_BACKEND=cpu, but the tensors are on a GPU; the CPU backend takes CPU memory");
  }
  cpu::CpuCommunicatorOptions cpu_options;
  cpu_options.ring.rank = options.rank;
  cpu_options.ring.world_size = options.world_size;
  cpu_options.ring.host = options.host;
  cpu_options.ring.transport =
      options.cpu_transport == "tcp" ? cpu::TransportChoice::kTcp : cpu::TransportChoice::kAuto;
  cpu_options.timeout = options.timeout;
  ASSIGN_OR_RETURN(auto communicator, cpu::CpuCommunicator::Connect(store, cpu_options));
  return std::unique_ptr<Communicator>(std::move(communicator));
}

}  // namespace ddp
