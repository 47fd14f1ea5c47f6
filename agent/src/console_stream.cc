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

void ConsoleStream::Emit(std::string& out, std::string_view text, bool ends_line) {
  const bool redraw = return_held_;
  if (redraw) {
    // The redraw's '\r' goes out with its text: the line is drawn again, prefix included.
    out.push_back('\r');
    return_held_ = line_started_ = false;
  }
  // An empty line of its own still shows whose it is; the '\n' of a "\r\n" does not.
  if (!line_started_ && (!text.empty() || (ends_line && !redraw))) out.append(prefix_);
  out.append(text);
  if (ends_line) out.push_back('\n');
  line_started_ = !ends_line;
  interrupted_ = false;
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
        Emit(out, std::string_view(held_).substr(0, max_line_bytes_), /*ends_line=*/true);
        held_.erase(0, max_line_bytes_);
      }
      break;
    }
    // The segment's text: straight from the chunk unless its start came in an earlier one.
    if (!held_.empty()) held_.append(chunk.substr(0, end));
    const std::string_view text = held_.empty() ? chunk.substr(0, end) : std::string_view(held_);
    if (chunk[end] == '\n') {
      // The '\n' that would end a line another stream ended already: nothing to show.
      if (interrupted_ && text.empty()) {
        interrupted_ = return_held_ = line_started_ = false;
      } else {
        Emit(out, text, /*ends_line=*/true);
      }
    } else {
      // A '\r' ends the text drawn so far and is held for the text that draws the line anew.
      if (!text.empty()) Emit(out, text, /*ends_line=*/false);
      return_held_ = true;
    }
    held_.clear();
    chunk.remove_prefix(end + 1);
  }
  // A redraw ('\r' and its text) arrives in one write of the worker's: it goes out now, whole.
  if (return_held_ && !held_.empty()) {
    Emit(out, held_, /*ends_line=*/false);
    held_.clear();
  }
  if (!out.empty()) write(out);
}

void ConsoleStream::FlushPartial(const Write& write) {
  if (held_.empty()) return;
  std::string out;
  Emit(out, held_, /*ends_line=*/false);
  held_.clear();
  write(out);
}

void ConsoleStream::Finish(const Write& write) {
  FlushPartial(write);
  if (line_started_) write("\n");
  line_started_ = return_held_ = false;
}

}  // namespace ddprun
