// `ddprun`'s whole command line (ParseCommandLine): every flag, --rdzv_conf, --redirects/--tee,
// --nnodes, endpoints, --hosts/--hostfile, the submit form. The input is argv without the
// program name, NUL-separated; the dictionary holds the flags' names. A usage error is one line.
//
// Parsing creates --log_dir, so every --log_dir the input names is replaced by one inside the
// fuzzer's own directory; the PET_* and SLURM_* variables that would feed flags are cleared.
#include <cstdlib>
#include <string>
#include <variant>

#include "command_line.h"
#include "fuzz_support.h"

extern char** environ;

namespace {
std::string* confined_log_dir = nullptr;

// Clears every variable the command line reads as a default: a fuzzer run must depend on its
// input only.
void ClearInheritedSettings() {
  std::vector<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    for (const char* prefix : {"PET_", "SLURM_", "MASTER_", "WORLD_SIZE", "RANK", "PYTHON_EXEC",
                               "TORCHELASTIC_", "DDPRUN_"}) {
      if (name.rfind(prefix, 0) == 0 && name != "DDPRUN_LOG_LEVEL") names.push_back(name);
    }
  }
  for (const std::string& name : names) ::unsetenv(name.c_str());
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  confined_log_dir = new std::string(ddprun::fuzz::PrepareProcess() + "/logs");
  ClearInheritedSettings();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = ddprun::fuzz::SplitAtNul(ddprun::fuzz::AsText(data, size));
  for (std::string& arg : args) {
    // "--log_dir", "--log-dir" and "--log_dir=X": every run writes under the confined directory.
    if (arg.rfind("--log", 0) == 0) arg = "--log_dir=" + *confined_log_dir;
  }
  const ddprun::ParsedCommandLine parsed = ddprun::ParseCommandLine(args);
  if (const auto* error = std::get_if<ddprun::UsageError>(&parsed)) {
    ddprun::fuzz::CheckOneLineMessage(error->message);
  }
  return 0;
}
