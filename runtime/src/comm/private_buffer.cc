// AllocatePrivateBuffer, and the default Communicator::AllocateShared that uses it.
#include "comm/private_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "ddp/communicator.h"

namespace ddp {
namespace {

constexpr size_t kPageBytes = 4096;

class PrivateBuffer final : public RegisteredBuffer {
 public:
  explicit PrivateBuffer(size_t bytes)
      : bytes_(bytes),
        data_(std::aligned_alloc(kPageBytes, (bytes + kPageBytes - 1) / kPageBytes * kPageBytes +
                                                 (bytes == 0 ? kPageBytes : 0))) {
    if (data_ == nullptr) throw std::bad_alloc();
    std::memset(data_, 0, bytes_);
  }
  ~PrivateBuffer() override { std::free(data_); }

  void* data() const override { return data_; }
  size_t bytes() const override { return bytes_; }
  bool direct() const override { return false; }

 private:
  const size_t bytes_;
  void* const data_;
};

}  // namespace

std::shared_ptr<RegisteredBuffer> AllocatePrivateBuffer(size_t bytes) {
  return std::make_shared<PrivateBuffer>(bytes);
}

ddprun::Result<std::shared_ptr<RegisteredBuffer>> Communicator::AllocateShared(size_t bytes) {
  return AllocatePrivateBuffer(bytes);
}

}  // namespace ddp
