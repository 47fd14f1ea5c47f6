// ConsoleStream: a worker's bytes in, the console's writes out: whole lines behind the prefix,
// redraws with their '\r', partial lines on flush, the prefix only where a line starts; and the
// console they share, where no stream continues another's open line.
#include "ddprun/agent/console_stream.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ddprun/agent/shared_console.h"

using ddprun::ConsoleStream;

namespace {

// Every write, in order.
struct Console {
  std::vector<std::string> writes;
  ConsoleStream::Write writer() {
    return [this](std::string_view bytes) { writes.emplace_back(bytes); };
  }
  std::string All() const {
    std::string all;
    for (const auto& w : writes) all += w;
    return all;
  }
};

}  // namespace

TEST_CASE("a line split across chunks goes out whole, in one write") {
  ConsoleStream stream("[rank0]: ");
  Console console;
  stream.Append("hel", console.writer());
  CHECK(console.writes.empty());
  CHECK(stream.holds_partial());
  stream.Append("lo\nwor", console.writer());
  stream.Append("ld\n", console.writer());
  CHECK(console.writes == std::vector<std::string>{"[rank0]: hello\n", "[rank0]: world\n"});
  CHECK_FALSE(stream.holds_partial());
}

TEST_CASE("the lines of one chunk, empty ones included, go out in one write") {
  ConsoleStream stream("[rank1]: ");
  Console console;
  stream.Append("a\n\nb\nc", console.writer());
  CHECK(console.writes == std::vector<std::string>{"[rank1]: a\n[rank1]: \n[rank1]: b\n"});
  stream.Finish(console.writer());
  CHECK(console.All() == "[rank1]: a\n[rank1]: \n[rank1]: b\n[rank1]: c\n");
  stream.Finish(console.writer());  // nothing more
  CHECK(console.writes.size() == 3);
}

TEST_CASE(
    "a progress bar redraws in place: each carriage return goes out with the text that redraws "
    "the line, behind the prefix again") {
  ConsoleStream stream("[rank0]: ");
  Console console;
  stream.Append("progress 1/3\r", console.writer());
  CHECK(console.writes.back() == "[rank0]: progress 1/3");
  CHECK_FALSE(stream.holds_partial());
  stream.Append("progress 2/3\rprogress 3/3\r", console.writer());
  CHECK(console.writes.back() == "\r[rank0]: progress 2/3\r[rank0]: progress 3/3");
  stream.Append("\n", console.writer());  // the bar's last line ends: no prefix of its own
  CHECK(console.writes.back() == "\r\n");
  // tqdm's order: '\r' first, then the bar, in one write: out at once, in one piece.
  stream.Append("\r 40%|####", console.writer());
  CHECK(console.writes.back() == "\r[rank0]:  40%|####");
  CHECK_FALSE(stream.holds_partial());
  // A '\r' alone waits for its text, however long it takes.
  const size_t writes = console.writes.size();
  stream.Append("\r", console.writer());
  stream.FlushPartial(console.writer());
  CHECK(console.writes.size() == writes);
  stream.Append(" 50%|#####", console.writer());
  CHECK(console.writes.back() == "\r[rank0]:  50%|#####");
  stream.Append("\r100%|##########|\n", console.writer());
  CHECK(console.writes.back() == "\r[rank0]: 100%|##########|\n");
  stream.Append("\r\r", console.writer());  // no text: nothing to draw
  stream.Finish(console.writer());
  CHECK(console.writes.size() == writes + 2);
}

TEST_CASE("a redraw's text split across reads continues its line, behind one prefix") {
  ConsoleStream stream("[rank1]: ");
  Console console;
  stream.Append("\r 10%", console.writer());
  stream.Append("|#", console.writer());
  stream.Append("# 2/20\r", console.writer());
  CHECK(console.All() == "\r[rank1]:  10%|## 2/20");
  stream.Finish(console.writer());
  CHECK(console.All() == "\r[rank1]:  10%|## 2/20\n");
}

TEST_CASE("a prompt flushed before its line ends keeps one prefix for the whole line") {
  ConsoleStream stream("[rank0]: ");
  Console console;
  stream.Append("Continue? [y/n] ", console.writer());
  CHECK(console.writes.empty());
  stream.FlushPartial(console.writer());
  stream.FlushPartial(console.writer());  // nothing held: nothing written
  CHECK(console.writes == std::vector<std::string>{"[rank0]: Continue? [y/n] "});
  stream.Append("y\nnext\n", console.writer());
  CHECK(console.writes.back() == "y\n[rank0]: next\n");
}

TEST_CASE(
    "a line that ends without a newline is ended at the finish, so the next output starts on a "
    "line "
    "of its own") {
  ConsoleStream stream("[rank2]: ");
  Console console;
  stream.Append("no newline", console.writer());
  stream.FlushPartial(console.writer());
  stream.Finish(console.writer());
  CHECK(console.All() == "[rank2]: no newline\n");
}

TEST_CASE("an endless line goes out in bounded pieces, each behind the prefix") {
  ConsoleStream stream("> ", 4);
  Console console;
  stream.Append("abcdefghij", console.writer());
  CHECK(console.All() == "> abcd\n> efgh\n");
  stream.Append("\n", console.writer());
  CHECK(console.All() == "> abcd\n> efgh\n> ij\n");
}

TEST_CASE(
    "another worker's line never continues a line left open: the open line is ended first "
    "and continues behind its prefix") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ddprun::SharedConsole console;
  ConsoleStream a("[rank0]: "), b("[rank1]: ");
  auto to = [&](ConsoleStream& stream) {
    return [&](std::string_view bytes) { console.Write(fds[1], stream, bytes); };
  };
  a.Append("epoch 1 ", to(a));
  a.FlushPartial(to(a));       // a prompt, or a line paused for over 100 ms
  b.Append("hello\n", to(b));  // ends rank 0's open line first
  a.Append("done\n", to(a));   // rank 0's line goes on, behind its prefix again
  a.Append(" 40%\r", to(a));   // a progress bar, its '\r' held for its next text
  b.Append("bye\n", to(b));
  a.Append("\n", to(a));      // the bar's end: its line was ended already, nothing shows
  a.Append("\r 1/2", to(a));  // a redraw goes out whole: no line that holds only the '\r'
  b.Append("hi\n", to(b));
  a.Append("\r 2/2\r\n", to(a));
  a.Append("next\n", to(a));
  ::close(fds[1]);
  std::string all;
  char buffer[256];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof(buffer))) > 0;) all.append(buffer, n);
  ::close(fds[0]);
  CHECK(all ==
        "[rank0]: epoch 1 \n[rank1]: hello\n[rank0]: done\n[rank0]:  40%\n[rank1]: bye\n"
        "\r[rank0]:  1/2\n[rank1]: hi\n\r[rank0]:  2/2\r\n[rank0]: next\n");
}
