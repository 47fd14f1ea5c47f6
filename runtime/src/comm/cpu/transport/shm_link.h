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

namespace ddp::cpu {

struct ShmRing;  // the shared header and data, see shm_link.cc

// A mapped ring segment; unmapped (and, for its creator, unlinked) on destruction.
//
// Ranks that are threads of one process share one mapping of a segment: Open finds the one
// Create made in this process. Besides saving a mapping, the two ends then synchronize on the
// same addresses, which ThreadSanitizer can follow (it cannot see that two mappings of the same
// pages are the same memory). Create and Open are thread-safe.
class ShmSegment {
 public:
  // Creates a new segment named `name` ("/something", unique on the host).
  static ddprun::Result<std::shared_ptr<ShmSegment>> Create(const std::string& name);
  // Opens the segment another rank created (this process's own mapping when it created it),
  // and unlinks its name (both ends have it now).
  static ddprun::Result<std::shared_ptr<ShmSegment>> Open(const std::string& name);
  ~ShmSegment();

  ShmRing& ring() { return *ring_; }
  const std::string& name() const { return name_; }

 private:
  ShmSegment(std::string name, ShmRing* ring, bool owner)
      : name_(std::move(name)), ring_(ring), owner_(owner) {}
  std::string name_;
  ShmRing* ring_;
  bool owner_;
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
