// LineSplitter; see line_splitter.h.
#include "ddprun/agent/line_splitter.h"

namespace ddprun {

void LineSplitter::Append(std::string_view chunk, const LineHandler& emit) {
  while (!chunk.empty()) {
    const size_t newline = chunk.find('\n');
    if (newline == std::string_view::npos) {
      partial_.append(chunk);
      while (partial_.size() >= max_line_bytes_) {
        emit(std::string_view(partial_).substr(0, max_line_bytes_));
        partial_.erase(0, max_line_bytes_);
      }
      return;
    }
    if (partial_.empty()) {
      emit(chunk.substr(0, newline));
    } else {
      partial_.append(chunk.substr(0, newline));
      emit(partial_);
      partial_.clear();
    }
    chunk.remove_prefix(newline + 1);
  }
}

void LineSplitter::Flush(const LineHandler& emit) {
  if (partial_.empty()) return;
  emit(partial_);
  partial_.clear();
}

}  // namespace ddprun
