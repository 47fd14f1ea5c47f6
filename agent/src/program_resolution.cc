// ResolveWorkerCommand; see program_resolution.h.
#include "ddprun/agent/program_resolution.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `path` as seen from the context's working directory.
std::string Seen(const ProgramContext& context, const std::string& path) {
  if (context.working_dir.empty() || path.empty() || path[0] == '/') return path;
  return context.working_dir + "/" + path;
}

Status CheckExecutableFile(const std::string& path, const std::string& shown_as) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return InvalidArgumentError("program '" + shown_as + "' does not exist");
  }
  if (S_ISDIR(info.st_mode)) {
    return InvalidArgumentError("program '" + shown_as + "' is a directory, not a program");
  }
  if (::access(path.c_str(), X_OK) != 0) {
    return InvalidArgumentError("program '" + shown_as +
                                "' is not executable; chmod +x it or name its interpreter");
  }
  return Status::Ok();
}

}  // namespace

Result<ProgramMode> ProgramModeOf(bool module, bool no_python, bool run_path) {
  if (module && run_path) {
    return InvalidArgumentError("-m/--module and --run_path cannot be used together");
  }
  if (module && no_python) {
    return InvalidArgumentError("-m/--module and --no_python cannot be used together");
  }
  if (run_path) return ProgramMode::kRunPath;
  if (no_python) return ProgramMode::kNoPython;
  return module ? ProgramMode::kModule : ProgramMode::kAsTyped;
}

ProgramContext ProgramContext::OfThisProcess() {
  ProgramContext context;
  const char* path = std::getenv("PATH");
  if (path != nullptr) context.path = path;
  const char* python_exec = std::getenv("PYTHON_EXEC");
  if (python_exec != nullptr) context.python_exec = python_exec;
  return context;
}

Result<std::string> FindExecutable(const std::string& name, const ProgramContext& context) {
  if (name.empty()) return InvalidArgumentError("empty program name");
  if (name.find('/') != std::string::npos) {
    RETURN_IF_ERROR(CheckExecutableFile(Seen(context, name), name));
    return name;
  }
  const std::string path = context.path.empty() ? "/usr/local/bin:/usr/bin:/bin" : context.path;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    const std::string seen = Seen(context, candidate);
    struct stat info {};
    if (::stat(seen.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(seen.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return InvalidArgumentError(
      "program '" + name + "' was not found on PATH; give its path (for example ./" + name + ")");
}

Result<std::vector<std::string>> ResolveWorkerCommand(const ProgramRequest& request,
                                                      const ProgramContext& context) {
  std::vector<std::string> argv;
  const bool python = request.mode == ProgramMode::kRunPath ||
                      request.mode == ProgramMode::kModule ||
                      (request.mode == ProgramMode::kAsTyped && EndsWith(request.program, ".py"));
  if (python) {
    auto interpreter =
        FindExecutable(context.python_exec.empty() ? "python3" : context.python_exec, context);
    if (!interpreter.ok()) {
      return InvalidArgumentError("no Python interpreter to run '" + request.program +
                                  "': " + interpreter.status().message() + " (set PYTHON_EXEC)");
    }
    argv = {interpreter.value(), "-u"};
    if (request.mode == ProgramMode::kModule) {
      argv.push_back("-m");
    } else if (::access(Seen(context, request.program).c_str(), R_OK) != 0) {
      return InvalidArgumentError("script '" + request.program +
                                  "' does not exist or cannot be read");
    }
    argv.push_back(request.program);
  } else {
    ASSIGN_OR_RETURN(std::string executable, FindExecutable(request.program, context));
    argv.push_back(std::move(executable));
  }
  argv.insert(argv.end(), request.args.begin(), request.args.end());
  return argv;
}

}  // namespace ddprun
