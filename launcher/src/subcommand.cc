// ParseSubcommand; see subcommand.h.
#include "subcommand.h"

#include <cstdio>
#include <iostream>

namespace ddprun {

int ParseSubcommand(CommandSpec command, const std::string& name,
                    const std::vector<std::string>& args) {
  const FlagParser parser(std::move(command));
  auto parsed = parser.Parse(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "ddprun %s: error: %s (see ddprun %s --help)\n", name.c_str(),
                 parsed.status().message().c_str(), name.c_str());
    return 2;
  }
  if (parsed->help) {
    std::cout << parser.Help();
    return 0;
  }
  return kGoOn;
}

}  // namespace ddprun
