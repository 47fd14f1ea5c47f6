// OutputRing: a job's recent output, bounded, read by many readers each at its own offset.
#include "output_ring.h"

#include <catch2/catch.hpp>

using namespace ddprun;

namespace {

std::string Text(const OutputRead& read) {
  std::string text;
  for (const auto& piece : read.pieces) text += piece.data;
  return text;
}

}  // namespace

TEST_CASE("an output ring gives every reader what it has not read, keeping the streams apart") {
  OutputRing ring(1024);
  ring.Append(OutputStream::kStdout, "one\n");
  ring.Append(OutputStream::kStderr, "two\n");
  ring.Append(OutputStream::kStdout, "three\n");
  OutputRead all = ring.Read(0, 1 << 20);
  REQUIRE(all.pieces.size() == 3);
  CHECK(all.pieces[1].stream == OutputStream::kStderr);
  CHECK(Text(all) == "one\ntwo\nthree\n");
  CHECK(all.next == 14);
  CHECK(all.dropped == 0);
  // A reader in the middle of a piece gets the rest of it.
  CHECK(Text(ring.Read(6, 1 << 20)) == "o\nthree\n");
  CHECK(ring.Read(14, 1 << 20).pieces.empty());
  CHECK(ring.Read(14, 1 << 20).next == 14);
}

TEST_CASE("an output ring keeps its capacity of the newest output and says what a reader missed") {
  OutputRing ring(10);
  ring.Append(OutputStream::kStdout, "0123456789");
  ring.Append(OutputStream::kStderr, "abcde");
  OutputRead read = ring.Read(0, 1 << 20);
  CHECK(read.dropped == 5);
  CHECK(Text(read) == "56789abcde");
  CHECK(read.next == 15);
  CHECK(ring.end() == 15);
}

TEST_CASE("an output ring reads at most about the bytes asked for, in whole pieces") {
  OutputRing ring(1 << 20);
  ring.Append(OutputStream::kStdout, "aaaa");
  ring.Append(OutputStream::kStderr, "bbbb");
  ring.Append(OutputStream::kStdout, "cccc");
  OutputRead first = ring.Read(0, 5);
  CHECK(Text(first) == "aaaabbbb");
  OutputRead rest = ring.Read(first.next, 5);
  CHECK(Text(rest) == "cccc");
}
