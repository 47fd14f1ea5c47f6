// See fuzz_support.h.
#include "fuzz_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ddprun::fuzz {

std::vector<std::string> SplitAtNul(std::string_view bytes) {
  std::vector<std::string> pieces;
  if (bytes.empty()) return pieces;
  size_t start = 0;
  while (true) {
    const size_t nul = bytes.find('\0', start);
    pieces.emplace_back(bytes.substr(start, nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  return pieces;
}

namespace {
std::string* fuzzer_directory = nullptr;
}  // namespace

std::string PrepareProcess() {
  ::setenv("DDPRUN_LOG_LEVEL", "off", 1);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0 || ::dup2(null, STDIN_FILENO) < 0) {
    std::perror("fuzz: pointing stdin at /dev/null");
    std::abort();
  }
  ::close(null);
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ddprun_fuzz_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("fuzz: making the fuzzer's directory");
    std::abort();
  }
  fuzzer_directory = new std::string(pattern);
  std::atexit([] {
    std::error_code ignored;
    std::filesystem::remove_all(*fuzzer_directory, ignored);
  });
  return *fuzzer_directory;
}

ScratchFile::ScratchFile(const std::string& name) : path_(*fuzzer_directory + "/" + name) {}

void ScratchFile::Write(std::string_view bytes) const {
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::perror(("fuzz: writing " + path_).c_str());
    std::abort();
  }
}

void CheckOneLineMessage(const std::string& message) {
  if (message.empty() || message.find_first_of("\r\n") != std::string::npos) {
    std::fprintf(stderr, "fuzz: an error message that is not one line: '%s'\n", message.c_str());
    std::abort();
  }
}

void CheckOneLineError(const Status& status) {
  if (!status.ok()) CheckOneLineMessage(status.message());
}

}  // namespace ddprun::fuzz
