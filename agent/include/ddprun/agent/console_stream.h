// ConsoleStream: turns what one worker writes to one stream into the writes that put it on the
// console it shares with the other workers, each line behind the rank's prefix ("[rank3]: ").
//
// A whole line goes out in one write (prefix, text, '\n'), so the lines of different workers never
// tear. A progress bar redraws its line with '\r' and the new text: the '\r' is held until that
// text comes and goes out with it, in one write at the end of the read that brought the text, so
// a redraw is never split from its '\r' (which left an empty line when another worker's line came
// between) and shows at once. The text drawn before a '\r' goes out at that '\r'. Any other
// partial line goes out when the owner calls FlushPartial (after at most 100 ms without its end;
// a prompt), so that it shows as promptly as it would without ddprun. The prefix is written at the
// start of a line and after each '\r'. A line longer than max_line_bytes goes out in pieces of
// that size, each ended by '\n', so memory stays bounded whatever a worker writes. Not
// thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ddprun {

class ConsoleStream {
 public:
  using Write = std::function<void(std::string_view bytes)>;

  explicit ConsoleStream(std::string prefix, size_t max_line_bytes = 1 << 20)
      : prefix_(std::move(prefix)), max_line_bytes_(max_line_bytes) {}

  // Writes every line `chunk` completes, the text before each of its '\r', and the redraw after
  // its last '\r'; holds the rest.
  void Append(std::string_view chunk, const Write& write);
  // Writes the partial line held, if any.
  void FlushPartial(const Write& write);
  // At end of stream: writes the partial line held and ends it with '\n', so that what the
  // console shows next starts on a line of its own.
  void Finish(const Write& write);
  // A partial line is held (FlushPartial would write something).
  bool holds_partial() const { return !held_.empty(); }
  // The console's cursor is on a line this stream left unfinished: another stream writing now
  // would continue that line (SharedConsole).
  bool line_open() const { return line_started_; }
  // Another stream ended this stream's open line with '\n': its next bytes start a line anew,
  // behind the prefix, and a '\n' that comes first (the end of the line ended already) is
  // dropped.
  void Interrupt() {
    line_started_ = false;
    interrupted_ = true;
  }

 private:
  // Appends to `out` the held '\r' if any, the prefix where the line starts, `text`, and '\n'
  // when `ends_line`.
  void Emit(std::string& out, std::string_view text, bool ends_line);

  const std::string prefix_;
  const size_t max_line_bytes_;
  std::string held_;           // the current segment's bytes not written yet
  bool line_started_ = false;  // some of the current line is out (its prefix with it)
  bool return_held_ = false;   // a '\r' came that goes out with the text after it
  bool interrupted_ = false;   // Interrupt came after the last byte out
};

}  // namespace ddprun
