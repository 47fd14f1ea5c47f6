// ParseSubcommand; see subcommand.h.
#include "subcommand.h"

#include <cstdio>
#include <iostream>

namespace ddprun {

int ParseSubcommand(CLI::App& app, const std::string& name, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ddprun %s: error: %s (see ddprun %s --help)\n", name.c_str(), e.what(),
                 name.c_str());
    return 2;
  }
  return kGoOn;
}

}  // namespace ddprun
