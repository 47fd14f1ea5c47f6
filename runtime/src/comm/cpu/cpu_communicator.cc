// CpuCommunicator; see cpu_communicator.h.
#include "cpu_communicator.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "comm/collective_arguments.h"
#include "ddprun/base/status_macros.h"
#include "direct/direct_collectives.h"
#include "ring.h"

namespace ddp::cpu {
ddprun::Result<std::unique_ptr<CpuCommunicator>> CpuCommunicator::Connect(
    Store& store, const CpuCommunicatorOptions& options) {
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  auto links = ConnectRing(store, options.ring, deadline);
  if (!links.ok()) {
    return ddprun::Status(links.status().code(),
                          "rank " + std::to_string(options.ring.rank) +
                              " could not connect the CPU ring: " + links.status().message());
  }
  return std::unique_ptr<CpuCommunicator>(new CpuCommunicator(
      options.ring.rank, options.ring.world_size, std::move(links).value(), options.timeout));
}

CpuCommunicator::CpuCommunicator(int rank, int world_size, RingLinks links,
                                 std::chrono::milliseconds timeout)
    : rank_(rank), world_size_(world_size), timeout_(timeout), links_(std::move(links)) {
  if (links_.to_next) {
    sender_ = std::make_unique<SendQueue>(*links_.to_next,
                                          [this](const ddprun::Status& error) { Break(error); });
  }
  loop_ = std::thread([this] { Loop(); });
}

CpuCommunicator::~CpuCommunicator() {
  {
    ddprun::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // A receive or a send in progress (a neighbour that is stuck) returns at once.
  registered_.CloseAll();
  if (links_.from_prev) links_.from_prev->Close();
  if (links_.to_next) links_.to_next->Close();
  loop_.join();
  sender_.reset();
}

std::string CpuCommunicator::transport_to_next() const {
  if (!links_.to_next) return "none";
  return links_.next_is_shm ? "shm" : "tcp";
}

std::shared_ptr<Work> CpuCommunicator::Enqueue(std::string description, Run run,
                                               const SymmetricBuffer* direct_on) {
  auto work = std::make_shared<Work>();
  {
    ddprun::MutexLock lock(mu_);
    if (!broken_.ok()) {
      work->Complete(ddprun::Status(broken_.code(), description +
                                                        ": the communicator is broken by an "
                                                        "earlier failure: " +
                                                        broken_.message()));
      return work;
    }
    queue_.push_back({std::move(description), std::move(run), work, direct_on});
  }
  cv_.notify_all();
  return work;
}

std::shared_ptr<Work> CpuCommunicator::EnqueueDirect(const std::string& description,
                                                     RegisteredBuffers::Found found,
                                                     DirectRun run) {
  const SymmetricBuffer* on = found.buffer.get();
  return Enqueue(
      description + " in a registered buffer",
      [found = std::move(found), run = std::move(run)](const RingContext& ring) {
        return run(*found.buffer, found.offset, ring.deadline);
      },
      on);
}

void CpuCommunicator::Loop() {
  while (true) {
    Operation operation;
    {
      ddprun::MutexLock lock(mu_);
      cv_.wait(lock, [this]() REQUIRES(mu_) { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, nothing left
      operation = std::move(queue_.front());
      queue_.pop_front();
      if (stopping_) {
        operation.work->Complete(
            ddprun::Status(ddprun::StatusCode::kCancelled,
                           operation.description + ": the communicator was destroyed"));
        continue;
      }
      if (!broken_.ok()) {
        operation.work->Complete(ddprun::Status(
            broken_.code(),
            operation.description +
                ": the communicator is broken by an earlier failure: " + broken_.message()));
        continue;
      }
    }
    registered_.AnnounceCollective(++collectives_run_, operation.direct_on);
    const auto started = std::chrono::steady_clock::now();
    RingContext ring{rank_, world_size_, sender_.get(), links_.from_prev.get(), started + timeout_};
    ddprun::Status status = operation.run(ring);
    if (!status.ok()) {
      const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started);
      status = ddprun::Status(
          status.code(), operation.description + " failed on rank " + std::to_string(rank_) +
                             " after " + std::to_string(ran.count()) + " ms: " + status.message());
      Break(status);
    }
    operation.work->Complete(status);
  }
}

void CpuCommunicator::Break(const ddprun::Status& error) {
  {
    ddprun::MutexLock lock(mu_);
    if (!broken_.ok()) return;
    broken_ = error;
  }
  registered_.CloseAll();
  if (links_.to_next) links_.to_next->Close();
  if (links_.from_prev) links_.from_prev->Close();
}

std::shared_ptr<Work> CpuCommunicator::AllReduceAsync(TensorView tensor, ReduceOp op) {
  if (auto s = CheckDevice(tensor, Device::kCpu, "all_reduce's tensor"); !s.ok()) {
    return CompletedWork(s);
  }
  if (auto found = registered_.Find(tensor)) {
    return EnqueueDirect(DescribeCollective("all_reduce", tensor), std::move(*found),
                         [tensor, op](SymmetricBuffer& buffer, size_t offset, Deadline deadline) {
                           return DirectAllReduce(buffer, offset, tensor.count, tensor.type, op,
                                                  deadline);
                         });
  }
  return Enqueue(DescribeCollective("all_reduce", tensor), [tensor, op](const RingContext& ring) {
    return RingAllReduce(ring, tensor.data, tensor.count, tensor.type, op);
  });
}

std::shared_ptr<Work> CpuCommunicator::BroadcastAsync(TensorView tensor, int root) {
  for (auto s :
       {CheckDevice(tensor, Device::kCpu, "broadcast's tensor"), CheckRoot(root, world_size_)}) {
    if (!s.ok()) return CompletedWork(s);
  }
  if (auto found = registered_.Find(tensor)) {
    return EnqueueDirect(DescribeCollective("broadcast", tensor), std::move(*found),
                         [tensor, root](SymmetricBuffer& buffer, size_t offset, Deadline deadline) {
                           return DirectBroadcast(buffer, offset, tensor.count, tensor.type, root,
                                                  deadline);
                         });
  }
  return Enqueue(DescribeCollective("broadcast", tensor), [tensor, root](const RingContext& ring) {
    return RingBroadcast(ring, tensor.data, tensor.bytes(), root);
  });
}

std::shared_ptr<Work> CpuCommunicator::AllGatherAsync(TensorView input, TensorView output) {
  for (auto s : {CheckDevice(input, Device::kCpu, "all_gather's input"),
                 CheckDevice(output, Device::kCpu, "all_gather's output"),
                 CheckAllGather(input, output, world_size_)}) {
    if (!s.ok()) return CompletedWork(s);
  }
  if (auto found = registered_.Find(input)) {
    return EnqueueDirect(
        DescribeCollective("all_gather", input), std::move(*found),
        [input, output](SymmetricBuffer& buffer, size_t offset, Deadline deadline) {
          return DirectAllGather(buffer, offset, input.count, input.type, output.data, deadline);
        });
  }
  return Enqueue(DescribeCollective("all_gather", input), [input, output](const RingContext& ring) {
    auto* own =
        static_cast<std::byte*>(output.data) + static_cast<size_t>(ring.rank) * input.bytes();
    if (input.bytes() > 0 && own != input.data) std::memmove(own, input.data, input.bytes());
    return RingAllGather(ring, output.data, input.count, input.type);
  });
}

std::shared_ptr<Work> CpuCommunicator::ReduceScatterAsync(TensorView input, TensorView output,
                                                          ReduceOp op) {
  for (auto s : {CheckDevice(input, Device::kCpu, "reduce_scatter's input"),
                 CheckDevice(output, Device::kCpu, "reduce_scatter's output"),
                 CheckReduceScatter(input, output, world_size_)}) {
    if (!s.ok()) return CompletedWork(s);
  }
  if (auto found = registered_.Find(input)) {
    return EnqueueDirect(DescribeCollective("reduce_scatter", input), std::move(*found),
                         [output, op](SymmetricBuffer& buffer, size_t offset, Deadline deadline) {
                           return DirectReduceScatter(buffer, offset, output.count, output.type, op,
                                                      output.data, deadline);
                         });
  }
  return Enqueue(
      DescribeCollective("reduce_scatter", input), [input, output, op](const RingContext& ring) {
        // The input is left as it was: the ring works on a copy.
        std::vector<std::byte> scratch(input.bytes());
        if (!scratch.empty()) std::memcpy(scratch.data(), input.data, scratch.size());
        RETURN_IF_ERROR(RingReduceScatter(ring, scratch.data(), output.count, input.type, op));
        if (output.bytes() > 0) {
          std::memcpy(output.data, scratch.data() + static_cast<size_t>(ring.rank) * output.bytes(),
                      output.bytes());
        }
        return ddprun::Status::Ok();
      });
}

std::shared_ptr<Work> CpuCommunicator::BarrierAsync() {
  // One element per rank: every rank receives in every step, so none passes before all arrive.
  return Enqueue("barrier", [this](const RingContext& ring) {
    barrier_scratch_.assign(static_cast<size_t>(ring.world_size) * sizeof(int32_t), std::byte{0});
    return RingAllReduce(ring, barrier_scratch_.data(), static_cast<size_t>(ring.world_size),
                         DataType::kInt32, ReduceOp::kSum);
  });
}

ddprun::Result<std::shared_ptr<RegisteredBuffer>> CpuCommunicator::AllocateShared(size_t bytes) {
  auto result = std::make_shared<ddprun::Result<std::shared_ptr<RegisteredBuffer>>>(
      ddprun::InternalError("not allocated"));
  const bool shm_both_ways = links_.next_is_shm && links_.prev_is_shm;
  auto work = Enqueue("allocating a registered buffer of " + std::to_string(bytes) + " bytes",
                      [this, result, shm_both_ways, bytes](const RingContext& ring) {
                        *result = registered_.Allocate(ring, shm_both_ways, bytes);
                        return result->status();
                      });
  RETURN_IF_ERROR(work->Wait());
  return std::move(*result);
}

}  // namespace ddp::cpu
