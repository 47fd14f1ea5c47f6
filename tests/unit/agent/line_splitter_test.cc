// LineSplitter: chunks in, whole lines out.
#include "ddprun/agent/line_splitter.h"

#include <catch2/catch.hpp>

using ddprun::LineSplitter;

namespace {

struct Collector {
  std::vector<std::string> lines;
  LineSplitter::LineHandler handler() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

}  // namespace

TEST_CASE("a line split across chunks comes out whole") {
  LineSplitter splitter;
  Collector out;
  splitter.Append("hel", out.handler());
  CHECK(out.lines.empty());
  splitter.Append("lo\nwor", out.handler());
  splitter.Append("ld\n", out.handler());
  CHECK(out.lines == std::vector<std::string>{"hello", "world"});
}

TEST_CASE("several lines in one chunk, empty lines included, keep their order") {
  LineSplitter splitter;
  Collector out;
  splitter.Append("a\n\nb\nc", out.handler());
  CHECK(out.lines == std::vector<std::string>{"a", "", "b"});
  splitter.Flush(out.handler());
  CHECK(out.lines == std::vector<std::string>{"a", "", "b", "c"});
  splitter.Flush(out.handler());
  CHECK(out.lines.size() == 4);
}

TEST_CASE("an endless line is emitted in bounded pieces") {
  LineSplitter splitter(4);
  Collector out;
  splitter.Append("abcdefghij", out.handler());
  CHECK(out.lines == std::vector<std::string>{"abcd", "efgh"});
  splitter.Append("\n", out.handler());
  CHECK(out.lines.back() == "ij");
}
