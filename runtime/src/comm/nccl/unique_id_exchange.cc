// ExchangeUniqueId; see unique_id_exchange.h.
#include "comm/nccl/unique_id_exchange.h"

#include <cstring>
#include <string>

#include "ddprun/base/status_macros.h"

namespace ddp::nccl {

ddprun::Result<ncclUniqueId> ExchangeUniqueId(Store& store, int rank,
                                              std::chrono::milliseconds timeout) {
  ncclUniqueId id{};
  if (rank == 0) {
    if (ncclResult_t result = ncclGetUniqueId(&id); result != ncclSuccess) {
      return ddprun::InternalError(std::string("ncclGetUniqueId failed: ") +
                                   ncclGetErrorString(result));
    }
    const std::string bytes(reinterpret_cast<const char*>(&id), sizeof(id));
    RETURN_IF_ERROR(store.Set(kUniqueIdKey, bytes));
    return id;
  }
  if (auto s = store.Wait({kUniqueIdKey}, timeout); !s.ok()) {
    return ddprun::Status(s.code(), "waiting for rank 0's NCCL unique id: " + s.message());
  }
  ASSIGN_OR_RETURN(const std::string bytes, store.Get(kUniqueIdKey));
  if (bytes.size() != sizeof(id)) {
    return ddprun::InternalError("the NCCL unique id in the store has " +
                                 std::to_string(bytes.size()) + " bytes, not " +
                                 std::to_string(sizeof(id)));
  }
  std::memcpy(&id, bytes.data(), sizeof(id));
  return id;
}

}  // namespace ddp::nccl
