// ConsoleStream; see console_stream.h.
#include "ddprun/agent/console_stream.h"

#include <cstring>

namespace ddprun {
namespace {

// Where the first '\n' or '\r' of `text` is (npos: none). Two memchr scans: std::string_view's
// find_first_of calls memchr on the set once per byte, which took most of the console's time.
size_t LineEnd(std::string_view text) {
  const void* newline = std::memchr(text.data(), '\n', text.size());
  const size_t limit =
      newline ? static_cast<size_t>(static_cast<const char*>(newline) - text.data()) : text.size();
  const void* carriage_return = std::memchr(text.data(), '\r', limit);
  if (carriage_return)
    return static_cast<size_t>(static_cast<const char*>(carriage_return) - text.data());
  return newline ? limit : std::string_view::npos;
}

}  // namespace

std::string_view ConsoleStream::PrefixFor(std::string_view text) const {
  if (line_started_) return {};
  return text.empty() ? std::string_view() : std::string_view(prefix_);
}

void ConsoleStream::Append(std::string_view chunk, const Write& write) {
  // Everything this chunk lets out, in one write: the console is written from one thread, so
  // whole lines in one write never tear, and one write per chunk keeps the cost per line low.
  std::string out;
  out.reserve(chunk.size() + chunk.size() / 8);  // room for prefixes on lines of ~100 bytes
  while (!chunk.empty()) {
    const size_t end = LineEnd(chunk);
    if (end == std::string_view::npos) {
      held_.append(chunk);
      while (held_.size() >= max_line_bytes_) {
        const std::string_view piece = std::string_view(held_).substr(0, max_line_bytes_);
        out.append(PrefixFor(piece)).append(piece).push_back('\n');
        held_.erase(0, max_line_bytes_);
        line_started_ = after_return_ = false;
      }
      break;
    }
    const char terminator = chunk[end];
    // The line's text: straight from the chunk unless its start came in an earlier one.
    if (!held_.empty()) held_.append(chunk.substr(0, end));
    const std::string_view text = held_.empty() ? chunk.substr(0, end) : std::string_view(held_);
    // The '\n' that would have ended a line another stream ended already: nothing to show.
    const bool ended_already = interrupted_ && text.empty() && terminator == '\n';
    interrupted_ = false;
    // An empty line still shows its prefix, but not the '\n' of a "\r\n" nor a lone '\r'.
    const bool bare = text.empty() && (terminator == '\r' || after_return_);
    if (!ended_already) {
      if (!bare && !line_started_) out.append(prefix_);
      out.append(text).push_back(terminator);
    }
    held_.clear();
    // After '\r' the line is drawn again from its first column, prefix included.
    line_started_ = false;
    after_return_ = terminator == '\r';
    chunk.remove_prefix(end + 1);
  }
  if (!out.empty()) write(out);
}

void ConsoleStream::FlushPartial(const Write& write) {
  if (held_.empty()) return;
  std::string out;
  out.append(PrefixFor(held_)).append(held_);
  held_.clear();
  interrupted_ = false;
  line_started_ = true;
  after_return_ = false;
  write(out);
}

void ConsoleStream::Finish(const Write& write) {
  FlushPartial(write);
  if (line_started_) write("\n");
  line_started_ = after_return_ = false;
}

}  // namespace ddprun
