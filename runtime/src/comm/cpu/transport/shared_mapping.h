// SharedMapping: a named POSIX shared-memory object (/dev/shm) mapped into this process, the
// memory under the shared-memory ring and the registered buffers. One process creates it, the
// others open it by name; the name is removed (Unlink) once every process that needs it has it,
// so nothing is left in /dev/shm however the processes end later.
//
// Ranks that are threads of one process share one mapping: Open finds the one Create made in
// this process. Besides saving a mapping, the threads then synchronize on the same addresses,
// which ThreadSanitizer can follow (it cannot see that two mappings of the same pages are the
// same memory). Create, Open and Unlink are thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ddprun/base/status.h"

namespace ddp::cpu {

class SharedMapping {
 public:
  // Creates `name` ("/something", unique on the host) of `bytes` bytes, all zero. With
  // `reserve`, the pages are allocated now, so that a full /dev/shm is this call's error
  // (RESOURCE_EXHAUSTED) rather than a SIGBUS at the first write; the ring's 4 MiB are left
  // sparse.
  static ddprun::Result<std::shared_ptr<SharedMapping>> Create(const std::string& name,
                                                               size_t bytes, bool reserve);
  // Maps `name` as it was created (this process's own mapping when it created it). At least
  // `min_bytes` long, or INTERNAL.
  static ddprun::Result<std::shared_ptr<SharedMapping>> Open(const std::string& name,
                                                             size_t min_bytes);
  ~SharedMapping();  // unmaps; the creator also removes the name if it is still there
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;

  // Removes the name (the memory stays mapped wherever it is). Already removed: fine.
  void Unlink();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  SharedMapping(std::string name, void* data, size_t bytes, bool owner)
      : name_(std::move(name)), data_(data), bytes_(bytes), owner_(owner) {}
  const std::string name_;
  void* const data_;
  const size_t bytes_;
  const bool owner_;
};

}  // namespace ddp::cpu
