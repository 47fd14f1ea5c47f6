// The one place where the device layer's exceptions become errors as values.
//
// DeviceArray and the ops (ops/ops.h) are the layer below the runtime's API: like the standard
// containers they report a failure they cannot return (out of memory, no CUDA in this build, a
// CUDA or cuBLAS call that fails) by throwing. Every runtime function that returns a Status or a
// Result and reaches them runs its body through CatchDeviceErrors, so no exception leaves the
// library through a function that promises an error value.
#pragma once

#include <new>
#include <stdexcept>
#include <string>

#include "ddprun/base/status.h"

namespace ddp {

// Runs `body` (which returns a Status or a Result) and returns what it returns; an exception from
// the device layer becomes RESOURCE_EXHAUSTED (out of memory) or FAILED_PRECONDITION (the device
// cannot be used), its message prefixed with `what`.
template <typename Body>
auto CatchDeviceErrors(const std::string& what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return ddprun::ResourceExhaustedError(what + ": out of memory");
  } catch (const std::exception& error) {
    return ddprun::FailedPreconditionError(what + ": " + error.what());
  }
}

}  // namespace ddp
