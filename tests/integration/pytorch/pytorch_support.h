// Helpers of the tests that run real PyTorch under the real ddprun: an interpreter that imports
// torch, the scripts under tests/pytorch/, and the environment that puts that interpreter first
// on PATH, since ddprun runs a .py program with the `python3` a user's shell would find.
//
// Where no interpreter imports torch the tests are skipped (SkipTest) saying how to install
// it; `./run.sh test` (and so CI) installs python3-torch, so there they always run.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/skip.h"
#include "support/test_paths.h"

namespace ddprun::testing {

inline const std::string kPytorchScripts = paths::kPytorchScripts;

inline bool ImportsTorch(const std::string& python) {
  if (::access(python.c_str(), X_OK) != 0) return false;
  return Run({python, "-c", "import torch, torch.distributed"}, {}, 120s).code() == 0;
}

// The path of a python3 that imports torch: $DDPRUN_TEST_PYTHON, else the first python3 on PATH
// that does, else /usr/bin/python3. Empty when none does. Looked up once.
inline const std::string& PythonWithTorch() {
  static const std::string found = [] {
    std::vector<std::string> candidates;
    if (const char* chosen = std::getenv("DDPRUN_TEST_PYTHON")) candidates.push_back(chosen);
    std::stringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
    for (std::string dir; std::getline(path, dir, ':');) {
      if (!dir.empty()) candidates.push_back(dir + "/python3");
    }
    candidates.push_back("/usr/bin/python3");
    for (const auto& candidate : candidates) {
      if (ImportsTorch(candidate)) return candidate;
    }
    return std::string();
  }();
  return found;
}

// False, after SkipTest saying how to get it, when PyTorch cannot be imported here.
inline bool HavePytorch() {
  if (!PythonWithTorch().empty()) return true;
  SkipTest(
      "no python3 here imports torch; install it with apt-get install python3-torch "
      "(./run.sh test does)");
  return false;
}

// The directory of PythonWithTorch() followed by the current PATH.
inline std::string PathWithTorch() {
  const std::string& python = PythonWithTorch();
  const char* path = std::getenv("PATH");
  return python.substr(0, python.rfind('/')) + ":" + (path ? path : "");
}

// The environment changes for a ddprun that runs PyTorch scripts.
inline std::map<std::string, std::string> PytorchEnv() { return {{"PATH", PathWithTorch()}}; }

// A command prefix giving the same environment to a program run under another prefix (a
// network namespace): `env PATH=...`.
inline std::vector<std::string> PytorchEnvPrefix() {
  return {"/usr/bin/env", "PATH=" + PathWithTorch()};
}

inline std::string Script(const std::string& name) { return kPytorchScripts + "/" + name; }

}  // namespace ddprun::testing
