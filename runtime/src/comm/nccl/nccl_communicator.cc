// NcclCommunicator; see nccl_communicator.h.
#include "comm/nccl/nccl_communicator.h"

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "comm/collective_arguments.h"
#include "comm/nccl/unique_id_exchange.h"

namespace ddp::nccl {
namespace {

constexpr std::chrono::milliseconds kWatchdogPeriod{100};

ddprun::Status CudaError(const std::string& what, cudaError_t error) {
  return ddprun::InternalError(what + " failed: " + cudaGetErrorString(error));
}

ddprun::Status NcclError(const std::string& what, ncclResult_t result) {
  return ddprun::InternalError(what + " failed: " + ncclGetErrorString(result));
}

ddprun::Result<ncclDataType_t> NcclType(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
  }
  return ddprun::InvalidArgumentError("a data type NCCL does not take");
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
  }
  return ncclSum;
}

}  // namespace

ddprun::Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Connect(
    Store& store, const NcclCommunicatorOptions& options) {
  if (cudaError_t e = cudaSetDevice(options.device); e != cudaSuccess) {
    return CudaError("cudaSetDevice(" + std::to_string(options.device) + ")", e);
  }
  auto id = ExchangeUniqueId(store, options.rank, options.timeout);
  if (!id.ok()) return id.status();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = nullptr;
  if (ncclResult_t r =
          ncclCommInitRankConfig(&comm, options.world_size, id.value(), options.rank, &config);
      r != ncclSuccess) {
    return NcclError("ncclCommInitRankConfig (rank " + std::to_string(options.rank) + " of " +
                         std::to_string(options.world_size) + ")",
                     r);
  }
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    ncclCommDestroy(comm);
    return CudaError("cudaStreamCreate", e);
  }
  void* barrier = nullptr;
  if (cudaError_t e = cudaMalloc(&barrier, sizeof(float)); e != cudaSuccess) {
    cudaStreamDestroy(stream);
    ncclCommDestroy(comm);
    return CudaError("cudaMalloc of the barrier's buffer", e);
  }
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(options, comm, stream, barrier));
}

NcclCommunicator::NcclCommunicator(NcclCommunicatorOptions options, ncclComm_t comm,
                                   cudaStream_t stream, void* barrier_buffer)
    : options_(options), comm_(comm), stream_(stream), barrier_buffer_(barrier_buffer) {
  watchdog_ = std::thread([this] { Watchdog(); });
}

NcclCommunicator::~NcclCommunicator() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  watchdog_.join();
  cudaStreamSynchronize(stream_);
  for (auto& op : in_flight_) {
    op.work->Complete(ddprun::Status(ddprun::StatusCode::kCancelled,
                                     op.description + ": the communicator was destroyed"));
  }
  cudaFree(barrier_buffer_);
  cudaStreamDestroy(stream_);
  ncclCommDestroy(comm_);
}

std::shared_ptr<Work> NcclCommunicator::Launch(
    std::string description, const std::function<ncclResult_t(cudaStream_t)>& launch) {
  {
    std::lock_guard lock(mu_);
    if (!broken_.ok()) {
      return CompletedWork(ddprun::Status(
          broken_.code(), description + ": the communicator is broken: " + broken_.message()));
    }
  }
  cudaSetDevice(options_.device);
  // The collective reads what the caller's stream wrote: it starts after that stream's work.
  cudaEvent_t ready = nullptr;
  cudaEvent_t done = nullptr;
  if (cudaError_t e = cudaEventCreateWithFlags(&ready, cudaEventDisableTiming); e != cudaSuccess) {
    return CompletedWork(CudaError("cudaEventCreate", e));
  }
  cudaEventRecord(ready, cudaStreamLegacy);
  cudaStreamWaitEvent(stream_, ready, 0);
  cudaEventDestroy(ready);
  if (ncclResult_t r = launch(stream_); r != ncclSuccess) {
    ddprun::Status error = NcclError(description, r);
    Fail(error.message());
    return CompletedWork(error);
  }
  if (cudaError_t e = cudaEventCreateWithFlags(&done, cudaEventDisableTiming); e != cudaSuccess) {
    return CompletedWork(CudaError("cudaEventCreate", e));
  }
  cudaEventRecord(done, stream_);
  auto work = std::make_shared<NcclWork>(done);
  {
    std::lock_guard lock(mu_);
    in_flight_.push_back({std::move(description), std::chrono::steady_clock::now(), work});
  }
  cv_.notify_all();
  return work;
}

void NcclCommunicator::Watchdog() {
  cudaSetDevice(options_.device);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, kWatchdogPeriod);
    // Completed operations, oldest first (they complete in order on one stream).
    while (!in_flight_.empty() && in_flight_.front().work->Finished()) {
      InFlight op = std::move(in_flight_.front());
      in_flight_.pop_front();
      op.work->Complete(ddprun::Status::Ok());
    }
    ncclResult_t async_error = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async_error);
    const auto ran = in_flight_.empty()
                         ? std::chrono::milliseconds(0)
                         : std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - in_flight_.front().started);
    std::string failure;
    if (async_error != ncclSuccess && async_error != ncclInProgress) {
      failure =
          std::string("NCCL reported an asynchronous error: ") + ncclGetErrorString(async_error);
    } else if (!in_flight_.empty() && ran > options_.timeout) {
      failure =
          "timed out (DDPRUN_TIMEOUT is " + std::to_string(options_.timeout.count() / 1000) + " s)";
    }
    if (failure.empty()) continue;
    // The operation, its size, and how long it ran: what the worker's last words must say.
    const std::string what = in_flight_.empty()
                                 ? std::string("the communicator")
                                 : in_flight_.front().description + " (running for " +
                                       std::to_string(ran.count()) + " ms)";
    lock.unlock();
    Fail(what + " on rank " + std::to_string(options_.rank) + ": " + failure);
    lock.lock();
  }
}

void NcclCommunicator::Fail(const std::string& message) {
  std::deque<InFlight> pending;
  {
    std::lock_guard lock(mu_);
    if (!broken_.ok()) return;
    broken_ = ddprun::UnavailableError(message);
    pending.swap(in_flight_);
  }
  ncclCommAbort(comm_);  // no kernel of this communicator waits forever now
  for (auto& op : pending) op.work->Complete(ddprun::UnavailableError(message));
  std::fprintf(stderr, "ddp: NCCL failure: %s\n", message.c_str());
  if (options_.exit_on_failure) std::_Exit(1);  // as TORCH_NCCL_ASYNC_ERROR_HANDLING=1 does
}

std::shared_ptr<Work> NcclCommunicator::AllReduceAsync(TensorView tensor, ReduceOp op) {
  if (auto s = CheckDevice(tensor, Device::kCuda, "all_reduce's tensor"); !s.ok()) {
    return CompletedWork(s);
  }
  auto type = NcclType(tensor.type);
  if (!type.ok()) return CompletedWork(type.status());
  return Launch(DescribeCollective("all_reduce", tensor), [&](cudaStream_t stream) {
    return ncclAllReduce(tensor.data, tensor.data, tensor.count, type.value(), NcclOp(op), comm_,
                         stream);
  });
}

std::shared_ptr<Work> NcclCommunicator::BroadcastAsync(TensorView tensor, int root) {
  for (auto s : {CheckDevice(tensor, Device::kCuda, "broadcast's tensor"),
                 CheckRoot(root, options_.world_size)}) {
    if (!s.ok()) return CompletedWork(s);
  }
  auto type = NcclType(tensor.type);
  if (!type.ok()) return CompletedWork(type.status());
  return Launch(DescribeCollective("broadcast", tensor), [&](cudaStream_t stream) {
    return ncclBroadcast(tensor.data, tensor.data, tensor.count, type.value(), root, comm_, stream);
  });
}

std::shared_ptr<Work> NcclCommunicator::AllGatherAsync(TensorView input, TensorView output) {
  for (auto s : {CheckDevice(input, Device::kCuda, "all_gather's input"),
                 CheckDevice(output, Device::kCuda, "all_gather's output"),
                 CheckAllGather(input, output, options_.world_size)}) {
    if (!s.ok()) return CompletedWork(s);
  }
  auto type = NcclType(input.type);
  if (!type.ok()) return CompletedWork(type.status());
  return Launch(DescribeCollective("all_gather", input), [&](cudaStream_t stream) {
    return ncclAllGather(input.data, output.data, input.count, type.value(), comm_, stream);
  });
}

std::shared_ptr<Work> NcclCommunicator::ReduceScatterAsync(TensorView input, TensorView output,
                                                           ReduceOp op) {
  for (auto s : {CheckDevice(input, Device::kCuda, "reduce_scatter's input"),
                 CheckDevice(output, Device::kCuda, "reduce_scatter's output"),
                 CheckReduceScatter(input, output, options_.world_size)}) {
    if (!s.ok()) return CompletedWork(s);
  }
  auto type = NcclType(input.type);
  if (!type.ok()) return CompletedWork(type.status());
  return Launch(DescribeCollective("reduce_scatter", input), [&](cudaStream_t stream) {
    return ncclReduceScatter(input.data, output.data, output.count, type.value(), NcclOp(op), comm_,
                             stream);
  });
}

std::shared_ptr<Work> NcclCommunicator::BarrierAsync() {
  return Launch("barrier", [&](cudaStream_t stream) {
    return ncclAllReduce(barrier_buffer_, barrier_buffer_, 1, ncclFloat32, ncclSum, comm_, stream);
  });
}

}  // namespace ddp::nccl
