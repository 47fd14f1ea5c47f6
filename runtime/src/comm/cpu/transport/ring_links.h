// Setting up a rank's two ring links through the job's store: each rank publishes how to reach
// it (its TCP listener's address, its host's boot id, its pid, and the shared-memory ring it
// created for its previous rank), then connects to its next rank and accepts its previous one.
// The two ends of a link choose the same transport from the same published facts: shared memory
// when both are on one host and both allow it, TCP otherwise.
#pragma once

#include <memory>
#include <string>

#include "ddp/store.h"
#include "transport/link.h"

namespace ddp::cpu {

enum class TransportChoice { kAuto, kTcp };  // kTcp: DDPRUN_CPU_TRANSPORT=tcp

struct RingLinkOptions {
  int rank = 0;
  int world_size = 1;
  std::string host;  // the address other hosts reach this rank at
  TransportChoice transport = TransportChoice::kAuto;
  std::string key_prefix = "ddp/cpu";  // store keys: <key_prefix>/<rank>
};

struct RingLinks {
  std::unique_ptr<SendLink> to_next;
  std::unique_ptr<RecvLink> from_prev;
  bool next_is_shm = false;
  bool prev_is_shm = false;
};

// Every rank calls it at the same time (it waits for the others' keys). world_size 1: no links.
// Errors say which peer could not be reached, and how.
ddprun::Result<RingLinks> ConnectRing(Store& store, const RingLinkOptions& options,
                                      Deadline deadline);

}  // namespace ddp::cpu
