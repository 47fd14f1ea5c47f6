// The shared-memory transport, for ranks on one host: one single-producer single-consumer byte
// ring per direction in a POSIX shared-memory segment. The receiver creates the segment (and
// publishes its name); the sender opens it. Data is copied once, into the ring, and reduced by
// the receiver straight out of it.
//
// Waiting: a short spin (the common case: the peer is a few microseconds away), then futex waits
// in slices; between slices the peer's liveness is checked (PeerLiveness), so a peer that dies
// is noticed within a slice, and Close() (or a peer's Close) marks the ring closed for both.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "transport/link.h"
#include "transport/peer_liveness.h"
#include "transport/shared_mapping.h"

namespace ddp::cpu {

struct ShmRing;  // the shared header and data, see shm_link.cc

// A ring's segment: the ring in a SharedMapping (so ranks that are threads of one process share
// one mapping). Create and Open are thread-safe.
class ShmSegment {
 public:
  // Creates a new segment named `name` ("/something", unique on the host).
  static ddprun::Result<std::shared_ptr<ShmSegment>> Create(const std::string& name);
  // Opens the segment another rank created, and removes its name (both ends have it now).
  static ddprun::Result<std::shared_ptr<ShmSegment>> Open(const std::string& name);

  ShmRing& ring() { return *static_cast<ShmRing*>(mapping_->data()); }
  const std::string& name() const { return mapping_->name(); }

 private:
  explicit ShmSegment(std::shared_ptr<SharedMapping> mapping) : mapping_(std::move(mapping)) {}
  std::shared_ptr<SharedMapping> mapping_;
};

class ShmSendLink final : public SendLink {
 public:
  // `peer_pid`: the receiver's process, watched while waiting for room.
  ShmSendLink(std::shared_ptr<ShmSegment> segment, pid_t peer_pid, std::string peer);
  ~ShmSendLink() override;
  ddprun::Status Send(const void* data, size_t bytes, Deadline deadline) override;
  void Close() override;

 private:
  std::shared_ptr<ShmSegment> segment_;
  PeerLiveness peer_alive_;
  std::string peer_;
};

class ShmRecvLink final : public RecvLink {
 public:
  ShmRecvLink(std::shared_ptr<ShmSegment> segment, pid_t peer_pid, std::string peer);
  ~ShmRecvLink() override;
  // Waits until the sender has mapped the segment (after which the creator may go away without
  // the sender losing it).
  ddprun::Status AwaitSender(Deadline deadline);
  ddprun::Status Receive(size_t bytes, Deadline deadline, const Consumer& consume) override;
  void Close() override;

 private:
  std::shared_ptr<ShmSegment> segment_;
  PeerLiveness peer_alive_;
  std::string peer_;
};

}  // namespace ddp::cpu
