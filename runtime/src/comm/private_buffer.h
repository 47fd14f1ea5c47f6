// The RegisteredBuffer of memory no peer maps: what AllocateShared gives where memory cannot be
// shared. Collectives on it take the backend's usual path.
#pragma once

#include <memory>

#include "ddp/registered_buffer.h"

namespace ddp {

// `bytes` zero bytes, aligned to a page. Throws std::bad_alloc when memory runs out, as
// DeviceArray does.
std::shared_ptr<RegisteredBuffer> AllocatePrivateBuffer(size_t bytes);

}  // namespace ddp
