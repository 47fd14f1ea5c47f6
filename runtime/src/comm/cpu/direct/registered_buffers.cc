// RegisteredBuffers; see registered_buffers.h.
#include "direct/registered_buffers.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "comm/private_buffer.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"
#include "device_errors.h"

namespace ddp::cpu {
namespace {

// Room for a slice's name in the exchange: SharedMapping names are far shorter.
constexpr size_t kNameBytes = 64;

// What the user holds: this rank's slice of a SymmetricBuffer.
class SharedSlice final : public RegisteredBuffer {
 public:
  explicit SharedSlice(std::shared_ptr<SymmetricBuffer> buffer) : buffer_(std::move(buffer)) {}
  void* data() const override { return buffer_->slice(buffer_->rank()); }
  size_t bytes() const override { return buffer_->bytes(); }
  bool direct() const override { return true; }

 private:
  std::shared_ptr<SymmetricBuffer> buffer_;
};

ddprun::Result<std::shared_ptr<RegisteredBuffer>> PrivateBuffer(size_t bytes) {
  return CatchDeviceErrors("allocating a registered buffer of " + std::to_string(bytes) + " bytes",
                           [&]() -> ddprun::Result<std::shared_ptr<RegisteredBuffer>> {
                             return AllocatePrivateBuffer(bytes);
                           });
}

}  // namespace

ddprun::Result<std::shared_ptr<RegisteredBuffer>> RegisteredBuffers::Allocate(
    const RingContext& ring, bool shm_both_ways, size_t bytes) {
  const int n = ring.world_size;
  if (n == 1) return PrivateBuffer(bytes);  // nothing to share with
  auto log = ddprun::GetLogger("runtime");

  std::shared_ptr<SymmetricBuffer> own;
  std::vector<char> names(static_cast<size_t>(n) * kNameBytes, '\0');
  if (shm_both_ways) {
    auto created = SymmetricBuffer::Create(ring.rank, n, bytes);
    if (created.ok()) {
      own = std::move(created).value();
      {
        // Listed from the start, so that a CloseAll from now on closes it too.
        ddprun::MutexLock lock(mu_);
        std::erase_if(buffers_, [](const auto& buffer) { return buffer.expired(); });
        buffers_.push_back(own);
      }
      std::strncpy(&names[static_cast<size_t>(ring.rank) * kNameBytes], own->name().c_str(),
                   kNameBytes - 1);
    } else {
      log->warn("rank {}: a registered buffer of {} bytes is ordinary memory: {}", ring.rank, bytes,
                created.status().message());
    }
  }
  RETURN_IF_ERROR(
      RingAllGather(ring, names.data(), kNameBytes / sizeof(int32_t), DataType::kInt32));
  std::vector<std::string> slice_names;
  for (int r = 0; r < n; ++r) slice_names.emplace_back(&names[static_cast<size_t>(r) * kNameBytes]);
  const bool every_rank_created =
      std::none_of(slice_names.begin(), slice_names.end(), [](auto& name) { return name.empty(); });

  // One element per rank, as the barrier does, so that every rank takes part in every step.
  std::vector<int32_t> failed(static_cast<size_t>(n), 0);
  if (every_rank_created) {
    if (auto s = own->OpenPeers(slice_names); !s.ok()) {
      failed[static_cast<size_t>(ring.rank)] = 1;
      log->warn("rank {}: a registered buffer of {} bytes is ordinary memory: {}", ring.rank, bytes,
                s.message());
    }
  }
  RETURN_IF_ERROR(
      RingAllReduce(ring, failed.data(), failed.size(), DataType::kInt32, ReduceOp::kSum));
  if (own) own->UnlinkOwn();  // every peer has mapped it, or given up
  const bool any_rank_failed =
      std::any_of(failed.begin(), failed.end(), [](int32_t f) { return f != 0; });
  if (!every_rank_created || any_rank_failed) {
    if (own || !shm_both_ways) {
      log->debug("rank {}: a registered buffer of {} bytes is ordinary memory: {}", ring.rank,
                 bytes,
                 shm_both_ways ? "a peer could not share memory (see its log)"
                               : "the ranks are not all on one host");
    }
    own.reset();  // unmapped before the private memory is taken
    return PrivateBuffer(bytes);
  }
  return std::shared_ptr<RegisteredBuffer>(std::make_shared<SharedSlice>(std::move(own)));
}

std::optional<RegisteredBuffers::Found> RegisteredBuffers::Find(const TensorView& tensor) {
  if (tensor.device != Device::kCpu || tensor.data == nullptr) return std::nullopt;
  const auto* start = static_cast<const std::byte*>(tensor.data);
  ddprun::MutexLock lock(mu_);
  for (const auto& weak : buffers_) {
    auto buffer = weak.lock();
    if (!buffer) continue;
    const std::byte* slice = buffer->slice(buffer->rank());
    if (start >= slice && start + tensor.bytes() <= slice + buffer->bytes()) {
      return Found{std::move(buffer), static_cast<size_t>(start - slice)};
    }
  }
  return std::nullopt;
}

void RegisteredBuffers::AnnounceCollective(uint64_t number, const SymmetricBuffer* on) {
  ddprun::MutexLock lock(mu_);
  for (const auto& weak : buffers_) {
    if (auto buffer = weak.lock()) buffer->AnnounceCollective(number, buffer.get() == on);
  }
}

void RegisteredBuffers::CloseAll() {
  ddprun::MutexLock lock(mu_);
  for (const auto& weak : buffers_) {
    if (auto buffer = weak.lock()) buffer->Close();
  }
}

}  // namespace ddp::cpu
