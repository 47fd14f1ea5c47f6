// CurrentEnvironment and ToEnvp; see environment_map.h.
#include "ddprun/base/environment_map.h"

extern char** environ;

namespace ddprun {

EnvironmentMap CurrentEnvironment() {
  EnvironmentMap env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    auto equals = text.find('=');
    if (equals == std::string::npos) continue;
    env.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return env;
}

std::vector<std::string> ToEnvp(const EnvironmentMap& environment) {
  std::vector<std::string> envp;
  envp.reserve(environment.size());
  for (const auto& [key, value] : environment) envp.push_back(key + "=" + value);
  return envp;
}

}  // namespace ddprun
