// Every error is one line, whatever it quotes, and a file the user names is read with a bound:
// the two contracts the fuzzers check of every parser (tests/fuzz).
#include <catch2/catch.hpp>

#include "ddprun/base/files.h"
#include "ddprun/base/security_files.h"
#include "ddprun/base/status.h"

using namespace ddprun;

TEST_CASE("a status keeps its message on one line with its control characters escaped") {
  CHECK(InvalidArgumentError("bad 'a\nb\r\tc\x01'").message() == "bad 'a\\nb\\r\\tc\\x01'");
  CHECK(InvalidArgumentError("plain text, kept as it is: é").message() ==
        "plain text, kept as it is: é");
  CHECK(OneLine(std::string("nul\0x", 5)) == "nul\\x00x");
}

TEST_CASE("a file the user names that never ends is refused instead of read forever") {
  CHECK(ReadUserFile("--hostfile", "/dev/zero", 1 << 20).status().message() ==
        "--hostfile /dev/zero is larger than 1 MiB");
  CHECK(ReadTokenFile("/dev/zero").status().message() ==
        "--token-file /dev/zero is larger than 1 MiB");
  CHECK(ReadUserFile("--hostfile", "/nonexistent/hosts", 10).status().message() ==
        "cannot read --hostfile /nonexistent/hosts: No such file or directory");
  CHECK(ReadUserFile("x", "/dev/null", 10).value().empty());
}
