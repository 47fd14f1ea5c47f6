// OutputRing; see output_ring.h.
#include "output_ring.h"

#include <algorithm>

namespace ddprun {

void OutputRing::Append(OutputStream stream, std::string_view data) {
  if (data.empty()) return;
  if (!pieces_.empty() && pieces_.back().stream == stream && pieces_.back().data.size() < 4096) {
    pieces_.back().data.append(data);  // few large pieces, not many small ones
  } else {
    pieces_.push_back({end_, stream, std::string(data)});
  }
  end_ += static_cast<int64_t>(data.size());
  size_ += data.size();
  while (size_ > capacity_ && !pieces_.empty()) {
    Stored& oldest = pieces_.front();
    const size_t excess = size_ - capacity_;
    if (excess < oldest.data.size()) {
      // Drop only the head of the oldest piece, so the ring holds its full capacity.
      oldest.data.erase(0, excess);
      oldest.offset += static_cast<int64_t>(excess);
      size_ -= excess;
      break;
    }
    size_ -= oldest.data.size();
    pieces_.pop_front();
  }
}

OutputRead OutputRing::Read(int64_t from, size_t max_bytes) const {
  OutputRead read;
  const int64_t oldest = pieces_.empty() ? end_ : pieces_.front().offset;
  if (from < oldest) {
    read.dropped = oldest - from;
    from = oldest;
  }
  from = std::min(from, end_);
  read.next = from;
  // The first piece that holds `from`: the last one starting at or before it.
  auto it =
      std::upper_bound(pieces_.begin(), pieces_.end(), from,
                       [](int64_t offset, const Stored& piece) { return offset < piece.offset; });
  if (it != pieces_.begin()) --it;
  size_t taken = 0;
  for (; it != pieces_.end() && taken < max_bytes; ++it) {
    const int64_t piece_end = it->offset + static_cast<int64_t>(it->data.size());
    if (piece_end <= from) continue;
    const size_t skip = static_cast<size_t>(from - it->offset);
    read.pieces.push_back({it->stream, it->data.substr(skip)});
    taken += it->data.size() - skip;
    from = piece_end;
    read.next = piece_end;
  }
  return read;
}

}  // namespace ddprun
