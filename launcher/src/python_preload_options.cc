// --python_preload; see python_preload_options.h.
#include "python_preload_options.h"

#include <fstream>
#include <regex>

#include "ddprun/base/parsing.h"

namespace ddprun {
namespace {

bool IsModuleName(const std::string& name) {
  static const std::regex kModuleName(R"([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)");
  return std::regex_match(name, kModuleName);
}

// Whether the script imports torch at the start of a line.
bool ImportsTorch(const std::string& script) {
  static const std::regex kImport(R"(^\s*(import|from)\s+torch\b)");
  std::ifstream in(script);
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, kImport)) return true;
  }
  return false;
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

FlagSpec PythonPreloadFlag(std::string& value) {
  return {
      .name = "--python_preload",
      .help =
          "Python modules (torch) imported once per node by an interpreter that then forks every "
          "worker, so a restart costs a fork; auto: torch, when the script imports it",
      .target = &value};
}

Result<std::optional<PythonPreloadSpec>> ResolvePythonPreload(
    const std::string& value, const ProgramRequest& request,
    const std::vector<std::string>& worker_argv) {
  if (value.empty()) return std::optional<PythonPreloadSpec>();
  PythonPreloadSpec spec;
  if (value == "auto") {
    if (request.mode != ProgramMode::kModule && ImportsTorch(request.program)) {
      spec.modules = {"torch"};
    }
  } else {
    for (const std::string& name : SplitCommas(value)) {
      if (!IsModuleName(name)) {
        return InvalidArgumentError("--python_preload: '" + name +
                                    "' is not a module name; give modules like torch,numpy");
      }
      spec.modules.push_back(name);
    }
  }
  // ResolveWorkerCommand runs Python as `INTERPRETER -u [-m] PROGRAM ARGS...`.
  const bool python =
      request.mode == ProgramMode::kRunPath ||
      (request.mode != ProgramMode::kNoPython && worker_argv.size() >= 3 && worker_argv[1] == "-u");
  if (spec.modules.empty() || !python || BaseName(worker_argv[0]).rfind("python", 0) != 0) {
    return std::optional<PythonPreloadSpec>();
  }
  spec.interpreter = {worker_argv[0], "-u"};
  spec.module = request.mode == ProgramMode::kModule;
  spec.program = request.program;
  return std::optional<PythonPreloadSpec>(std::move(spec));
}

}  // namespace ddprun
