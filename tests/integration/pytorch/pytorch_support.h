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

// The python3 the tests run PyTorch with: $DDPRUN_TEST_PYTHON (the registration of the tests
// that run again under the oldest torch sets it), else the pinned torch's that the build was
// configured with (paths::kTorchPython), else the first python3 on PATH that imports torch, else
// /usr/bin/python3. Empty when the one chosen, or with neither set any, does not import torch.
// Looked up once.
inline const std::string& PythonWithTorch() {
  static const std::string found = [] {
    std::vector<std::string> candidates;
    if (const char* chosen = std::getenv("DDPRUN_TEST_PYTHON"); chosen && *chosen) {
      candidates.push_back(chosen);
    } else if (*paths::kTorchPython) {
      candidates.push_back(paths::kTorchPython);
    } else {
      std::stringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
      for (std::string dir; std::getline(path, dir, ':');) {
        if (!dir.empty()) candidates.push_back(dir + "/python3");
      }
      candidates.push_back("/usr/bin/python3");
    }
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
      "no python3 here imports torch (DDPRUN_TEST_PYTHON, or the build's "
      "DDPRUN_TEST_TORCH_PYTHON, where set); ./run.sh test installs the pinned torch and "
      "Debian's python3-torch");
  return false;
}

// torch.__version__ of PythonWithTorch() without its local part ("2.15.0", "1.13.1"); empty
// without one. Looked up once.
inline const std::string& TorchVersion() {
  static const std::string version = [] {
    if (PythonWithTorch().empty()) return std::string();
    auto result = Run(
        {PythonWithTorch(), "-c", "import torch; print(torch.__version__.split('+')[0], end='')"},
        {}, 120s);
    return result.code() == 0 ? result.out : std::string();
  }();
  return version;
}

// True when PythonWithTorch()'s torch is 2.x or later; else false, after SkipTest naming `what`
// as what needs it.
inline bool HaveTorch2(const std::string& what) {
  if (!HavePytorch()) return false;
  if (!TorchVersion().empty() && TorchVersion()[0] != '1') return true;
  SkipTest(what + " needs torch 2.x; this python3 has torch " + TorchVersion());
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
