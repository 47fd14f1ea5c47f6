// LineSplitter: turns the chunks read from a worker's pipe into whole lines, so that output from
// many workers interleaves line by line and never mid-line. Not thread-safe; one per stream.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ddprun {

class LineSplitter {
 public:
  using LineHandler = std::function<void(std::string_view line)>;  // without the '\n'

  // A line longer than max_line_bytes is emitted in pieces of that size, so memory stays bounded
  // whatever a worker writes.
  explicit LineSplitter(size_t max_line_bytes = 1 << 20) : max_line_bytes_(max_line_bytes) {}

  // Emits every line that `chunk` completes, in order.
  void Append(std::string_view chunk, const LineHandler& emit);
  // Emits the unterminated rest, if any (at end of stream).
  void Flush(const LineHandler& emit);

 private:
  const size_t max_line_bytes_;
  std::string partial_;
};

}  // namespace ddprun
