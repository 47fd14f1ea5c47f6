// A process environment as a map (name -> value), to read, change and hand to execve.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ddprun {

using EnvironmentMap = std::map<std::string, std::string>;

// The current process's environment.
EnvironmentMap CurrentEnvironment();

// "KEY=VALUE" strings, as execve wants them.
std::vector<std::string> ToEnvp(const EnvironmentMap& environment);

}  // namespace ddprun
