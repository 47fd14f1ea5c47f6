// OutputRing: the recent output of a job's agent, bounded in bytes, for `ddprun attach` and
// `ddprun logs`. Every byte has an offset counted from the job's start, so a reader keeps its own
// place (its next offset) and readers never hold anything up: a reader that falls further behind
// than the ring keeps learns how many bytes it missed. Not thread-safe (HostedJob locks it).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace ddprun {

enum class OutputStream { kStdout, kStderr };

struct OutputPiece {
  OutputStream stream = OutputStream::kStdout;
  std::string data;
};

struct OutputRead {
  std::vector<OutputPiece> pieces;
  int64_t next = 0;     // the offset after what was read: where the next read starts
  int64_t dropped = 0;  // bytes from the requested offset on that are no longer kept
};

class OutputRing {
 public:
  explicit OutputRing(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Keeps `data`, dropping the oldest output beyond the capacity.
  void Append(OutputStream stream, std::string_view data);
  // What is kept from offset `from` on, at most about `max_bytes` (whole pieces, the first may be
  // cut where `from` falls).
  OutputRead Read(int64_t from, size_t max_bytes) const;
  int64_t end() const { return end_; }

 private:
  struct Stored {
    int64_t offset;
    OutputStream stream;
    std::string data;
  };
  size_t capacity_;
  size_t size_ = 0;
  int64_t end_ = 0;
  std::deque<Stored> pieces_;
};

}  // namespace ddprun
