// What the fuzz targets share: libFuzzer's bytes turned into the shapes the parsers take (text,
// a command line, an environment, a file on disk), and the checks every target makes of an
// error it gets back. Each target is one file, `<what>_fuzzer.cc`, with LLVMFuzzerTestOneInput;
// tests/fuzz/README.md says how they are built and run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The bytes cut at every NUL, as argv is: "a\0b" is {"a", "b"}; empty input, no piece.
std::vector<std::string> SplitAtNul(std::string_view bytes);

// Quiets the project's loggers (an error logged per input would dominate the run), points
// stdin at /dev/null (a parser told to read "/dev/stdin" must not wait for a terminal), and
// makes a fresh directory of the fuzzer's own, removed at exit, for what the targets write.
// Call once, from LLVMFuzzerInitialize. Returns that directory. (The working directory stays:
// libFuzzer reads the inputs named on its command line after this.)
std::string PrepareProcess();

// A file holding the latest input, in the fuzzer's directory, for the parsers that read a path.
// Write replaces its content. After PrepareProcess.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name);
  const std::string& path() const { return path_; }
  void Write(std::string_view bytes) const;

 private:
  std::string path_;
};

// The contract every parser's error keeps: a message that says something, on one line. Aborts
// (a finding) when `status` breaks it; does nothing for OK.
void CheckOneLineError(const Status& status);
void CheckOneLineMessage(const std::string& message);

}  // namespace ddprun::fuzz
