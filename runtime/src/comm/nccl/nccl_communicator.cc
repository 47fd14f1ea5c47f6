// NcclCommunicator; see nccl_communicator.h.
#include "comm/nccl/nccl_communicator.h"

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "comm/collective_arguments.h"
#include "comm/nccl/unique_id_exchange.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"

namespace ddp::nccl {
namespace {

constexpr std::chrono::milliseconds kWatchdogPeriod{100};

ddprun::Status CudaError(const std::string& what, cudaError_t error) {
  return ddprun::InternalError(what + " failed: " + cudaGetErrorString(error));
}

ddprun::Status NcclError(const std::string& what, ncclResult_t result) {
  return ddprun::InternalError(what + " failed: " + ncclGetErrorString(result));
}

// For calls with nothing to return a failure to (a destructor, the cleanup of an error): logged.
void LogIfFailed(const std::string& what, cudaError_t error) {
  if (error != cudaSuccess) {
    ddprun::GetLogger("runtime")->error("{}", CudaError(what, error).message());
  }
}

void LogIfFailed(const std::string& what, ncclResult_t result) {
  if (result != ncclSuccess) {
    ddprun::GetLogger("runtime")->error("{}", NcclError(what, result).message());
  }
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
  ASSIGN_OR_RETURN(const ncclUniqueId id, ExchangeUniqueId(store, options.rank, options.timeout));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = nullptr;
  if (ncclResult_t r = ncclCommInitRankConfig(&comm, options.world_size, id, options.rank, &config);
      r != ncclSuccess) {
    return NcclError("ncclCommInitRankConfig (rank " + std::to_string(options.rank) + " of " +
                         std::to_string(options.world_size) + ")",
                     r);
  }
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    LogIfFailed("ncclCommDestroy after cudaStreamCreate failed", ncclCommDestroy(comm));
    return CudaError("cudaStreamCreate", e);
  }
  void* barrier = nullptr;
  if (cudaError_t e = cudaMalloc(&barrier, sizeof(float)); e != cudaSuccess) {
    LogIfFailed("cudaStreamDestroy after the barrier's cudaMalloc failed",
                cudaStreamDestroy(stream));
    LogIfFailed("ncclCommDestroy after the barrier's cudaMalloc failed", ncclCommDestroy(comm));
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
    ddprun::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  watchdog_.join();
  LogIfFailed("cudaStreamSynchronize of the communication stream (destroying the communicator)",
              cudaStreamSynchronize(stream_));
  std::deque<InFlight> pending;
  bool aborted = false;
  {
    ddprun::MutexLock lock(mu_);  // the watchdog has ended: taken for the analysis' sake
    pending.swap(in_flight_);
    aborted = !broken_.ok();
  }
  for (auto& op : pending) {
    op.work->Complete(ddprun::Status(ddprun::StatusCode::kCancelled,
                                     op.description + ": the communicator was destroyed"));
  }
  LogIfFailed("cudaFree of the barrier's buffer (destroying the communicator)",
              cudaFree(barrier_buffer_));
  LogIfFailed("cudaStreamDestroy (destroying the communicator)", cudaStreamDestroy(stream_));
  // A broken communicator was aborted (Fail), which freed it: destroying it again would be a
  // double free.
  if (!aborted) {
    LogIfFailed("ncclCommDestroy (rank " + std::to_string(options_.rank) + ")",
                ncclCommDestroy(comm_));
  }
}

std::shared_ptr<Work> NcclCommunicator::Launch(
    std::string description, const std::function<ncclResult_t(cudaStream_t)>& launch) {
  {
    ddprun::MutexLock lock(mu_);
    if (!broken_.ok()) {
      return CompletedWork(ddprun::Status(
          broken_.code(), description + ": the communicator is broken: " + broken_.message()));
    }
  }
  if (cudaError_t e = cudaSetDevice(options_.device); e != cudaSuccess) {
    return CompletedWork(
        CudaError(description + ": cudaSetDevice(" + std::to_string(options_.device) + ")", e));
  }
  // The collective reads what the caller's stream wrote: it starts after that stream's work.
  cudaEvent_t ready = nullptr;
  cudaEvent_t done = nullptr;
  if (cudaError_t e = cudaEventCreateWithFlags(&ready, cudaEventDisableTiming); e != cudaSuccess) {
    return CompletedWork(CudaError("cudaEventCreate", e));
  }
  cudaError_t ordered = cudaEventRecord(ready, cudaStreamLegacy);
  const char* ordering = "cudaEventRecord on the caller's stream";
  if (ordered == cudaSuccess) {
    ordered = cudaStreamWaitEvent(stream_, ready, 0);
    ordering = "cudaStreamWaitEvent of the communication stream";
  }
  const cudaError_t destroyed = cudaEventDestroy(ready);
  if (ordered != cudaSuccess) {
    LogIfFailed(description + ": cudaEventDestroy", destroyed);
    return CompletedWork(CudaError(description + ": " + ordering, ordered));
  }
  if (destroyed != cudaSuccess) {
    return CompletedWork(CudaError(description + ": cudaEventDestroy", destroyed));
  }
  if (ncclResult_t r = launch(stream_); r != ncclSuccess) {
    ddprun::Status error = NcclError(description, r);
    Fail(error.message());
    return CompletedWork(error);
  }
  if (cudaError_t e = cudaEventCreateWithFlags(&done, cudaEventDisableTiming); e != cudaSuccess) {
    return CompletedWork(CudaError("cudaEventCreate", e));
  }
  if (cudaError_t e = cudaEventRecord(done, stream_); e != cudaSuccess) {
    LogIfFailed(description + ": cudaEventDestroy", cudaEventDestroy(done));
    return CompletedWork(
        CudaError(description + ": cudaEventRecord on the communication stream", e));
  }
  auto work = std::make_shared<NcclWork>(done);
  {
    ddprun::MutexLock lock(mu_);
    in_flight_.push_back({std::move(description), std::chrono::steady_clock::now(), work});
  }
  cv_.notify_all();
  return work;
}

void NcclCommunicator::Watchdog() {
  if (cudaError_t e = cudaSetDevice(options_.device); e != cudaSuccess) {
    // Nothing to return it to; the event queries and NCCL's error query below still report.
    LogIfFailed("the NCCL watchdog's cudaSetDevice(" + std::to_string(options_.device) + ")", e);
  }
  ddprun::MutexLock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, kWatchdogPeriod);
    std::string failure;
    // Completed operations, oldest first (they complete in order on one stream).
    while (!in_flight_.empty()) {
      auto finished = in_flight_.front().work->Finished();
      if (!finished.ok()) {
        failure = finished.status().message();
        break;
      }
      if (!finished.value()) break;
      InFlight op = std::move(in_flight_.front());
      in_flight_.pop_front();
      op.work->Complete(ddprun::Status::Ok());
    }
    // Once broken, the communicator has been aborted, which freed it: nothing more to watch.
    if (!broken_.ok()) continue;
    const auto ran = in_flight_.empty()
                         ? std::chrono::milliseconds(0)
                         : std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - in_flight_.front().started);
    if (failure.empty()) {  // else an event query failed
      ncclResult_t async_error = ncclSuccess;
      if (ncclResult_t r = ncclCommGetAsyncError(comm_, &async_error); r != ncclSuccess) {
        failure = NcclError("ncclCommGetAsyncError", r).message();
      } else if (async_error != ncclSuccess && async_error != ncclInProgress) {
        failure =
            std::string("NCCL reported an asynchronous error: ") + ncclGetErrorString(async_error);
      } else if (!in_flight_.empty() && ran > options_.timeout) {
        failure = "timed out (DDPRUN_TIMEOUT is " +
                  std::to_string(options_.timeout.count() / 1000) + " s)";
      }
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
    ddprun::MutexLock lock(mu_);
    if (!broken_.ok()) return;
    broken_ = ddprun::UnavailableError(message);
    pending.swap(in_flight_);
  }
  // No kernel of this communicator waits forever now. Nothing to return a failure to: the
  // communicator is being failed already.
  LogIfFailed("ncclCommAbort (after: " + message + ")", ncclCommAbort(comm_));
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
