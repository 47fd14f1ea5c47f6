// FlagSpec: one command-line flag as data: its name, the other spellings derived from it, its
// PET_ variable, its help and where its value goes. Every flag of every program of the project
// (ddprun's table in launcher/src/flag_table.cc, ddprund's in daemon/src/daemon_config.cc, the
// load generator's in bench/daemon_load/) is a row of such a table; DefineFlags turns rows into
// CLI11's options, so that each flag's spellings and variable are made one way, and a table can
// be checked as a whole (no spelling twice; every torchrun flag in the README's migration table,
// tests/unit/launcher; every ddprund flag a key of its file, tests/unit/daemon).
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace CLI {
class App;
}

namespace ddprun {

struct FlagSpec {
  // Torchrun's spelling ("--nproc_per_node", or "--token-file" for ddprun's dashed ones). Its
  // twin with '-' and '_' swapped ("--nproc-per-node") is accepted too.
  std::string_view name = {};
  std::vector<std::string_view> aliases = {};  // other names: "-r", "--run_id" (with its twin)
  bool pet = true;                             // also read from PetVariable(name)
  // Empty: hidden from --help (a torchrun flag ddprun refuses, defined for its message).
  std::string_view help = {};
  // Where the value goes; a bool is a flag that takes no value.
  std::variant<std::string*, int*, double*, bool*> target = {};
  std::vector<std::string> choices = {};  // the values allowed; empty: any
  bool show_default = false;              // --help shows the default
};

// "--nproc_per_node" -> "PET_NPROC_PER_NODE"; "--token-file" -> "PET_TOKEN_FILE".
std::string PetVariable(std::string_view name);

// Every spelling of the flag: the name, its twin, each alias and its twin.
std::vector<std::string> Spellings(const FlagSpec& flag);

// Defines every row on `app`.
void DefineFlags(CLI::App& app, const std::vector<FlagSpec>& flags);

}  // namespace ddprun
