// FlagSpec: one command-line flag as data: its name, the other spellings derived from it, its
// variable, its help and where its value goes. Every flag of every program of the project
// (ddprun's table in launcher/src/flag_table.cc, its subcommands', ddprund's in
// daemon/src/daemon_config.cc, the load generator's in bench/daemon_load/) is a row of such a
// table; a FlagParser (flag_parser.h) reads a command line against the rows and writes their
// help, so that each flag's spellings and variable are made one way, and a table can be checked
// as a whole (no spelling twice; every torchrun flag in the README's migration table,
// tests/unit/launcher; every ddprund flag a key of its file, tests/unit/daemon).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ddprun {

struct FlagSpec {
  // Torchrun's spelling ("--nproc_per_node", or "--token-file" for ddprun's dashed ones). Its
  // twin with '-' and '_' swapped ("--nproc-per-node") is accepted too.
  std::string_view name = {};
  std::vector<std::string_view> aliases = {};  // other names: "-r", "--run_id" (with its twin)
  bool pet = true;                             // also read from VariableOf(*this)
  // The variable read when `pet`, where it is not PetVariable(name) ("DDPRUN_HOST").
  std::string_view variable = {};
  // Empty: hidden from --help (a torchrun flag ddprun refuses, defined for its message).
  std::string_view help = {};
  // Where the value goes; a bool is a flag that takes no value.
  std::variant<std::string*, int*, double*, bool*> target = {};
  std::vector<std::string> choices = {};  // the values allowed; empty: any
  bool show_default = false;              // --help shows the default
  bool required = false;                  // must be given, on the line or by its variable
  std::optional<double> minimum = {};     // the least number an int or double flag takes
};

// A named argument that is not a flag: `ddprun logs JOB`.
struct PositionalSpec {
  std::string_view name = {};  // "JOB"
  std::string_view help = {};
  std::string* target = nullptr;
  bool required = false;
};

// "--nproc_per_node" -> "PET_NPROC_PER_NODE"; "--token-file" -> "PET_TOKEN_FILE".
std::string PetVariable(std::string_view name);

// The variable a flag is read from when it is not given: `variable`, else PetVariable(name);
// empty when the flag has none (!pet).
std::string VariableOf(const FlagSpec& flag);

// Every spelling of the flag: short aliases first, the name, its twin, each long alias and its
// twin.
std::vector<std::string> Spellings(const FlagSpec& flag);

}  // namespace ddprun
