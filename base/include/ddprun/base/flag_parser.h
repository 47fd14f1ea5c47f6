// FlagParser: a program's command line read against its table of flags (flag_spec.h), and the
// --help that the table describes. One parser for every program of the project, so that every
// flag is spelled, read from its variable, checked and explained the same way.
//
// What it accepts, as torchrun's argparse and srun do:
//   --name=value, --name value, -n value, -nvalue  (a value that is another flag's spelling is
//                                                   not taken: "--a --b" says --a needs one)
//   --flag, --flag=true|false|1|0|yes|no|on|off   (a bool flag takes no value of its own)
//   --                                           (the end of the flags)
//   -h, --help                                   (a request for the help; nothing else counts)
// A flag not given is read from its variable (VariableOf: PET_<NAME>), where that is set and not
// empty; the command line wins over it. A flag given twice is an error (a bool flag may repeat).
// With `program_follows`, the first argument that is not a flag or a flag's value starts the
// program, and it and everything after it are the program's, verbatim (`ddprun [OPTIONS] PROGRAM
// [ARGS...]`); otherwise such arguments fill the positionals in order.
//
// Cost: linear in the arguments and the table (ddprun's start-up is a headline figure; CLI11,
// which this replaced, checked each option against every other as it was defined).
//
// Thread safety: a parser is immutable after construction; Parse writes the rows' targets, so
// parsing two command lines into the same targets at once is the caller's race.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ddprun/base/flag_spec.h"
#include "ddprun/base/status.h"

namespace ddprun {

struct CommandSpec {
  std::string_view synopsis = {};     // "ddprun [OPTIONS] PROGRAM [ARGS...]"
  std::string_view description = {};  // what the program does, for --help
  std::string_view footer = {};       // after the flags in --help (exit statuses...)
  std::vector<FlagSpec> flags = {};
  std::vector<PositionalSpec> positionals = {};
  bool program_follows = false;  // see above
};

struct ParsedFlags {
  bool help = false;  // -h or --help: nothing else was read
  // program_follows: the program and its arguments; empty when none was given.
  std::vector<std::string> program;
  // The arguments before the program that were flags and their values ("--" left out).
  std::vector<std::string> own;
  // Every spelling of every flag given, on the line or by its variable.
  std::set<std::string, std::less<>> given;

  // Whether the flag with this spelling was given (on the line or by its variable).
  bool Given(std::string_view spelling) const { return given.count(spelling) > 0; }
};

class FlagParser {
 public:
  // The spellings of `spec.flags` must be distinct (tests check each table); the defaults
  // --help shows are the targets' values now.
  explicit FlagParser(CommandSpec spec);

  // Reads `args` (without the program's own name) into the rows' targets. INVALID_ARGUMENT with
  // one line that names the flag or variable and what was wrong: an unknown flag ("unrecognized
  // option --x"), a missing or malformed value, a value not among the choices or under the
  // minimum, a flag given twice, a required flag or positional missing, an extra argument.
  Result<ParsedFlags> Parse(const std::vector<std::string>& args) const;

  // `args` without the flags that have any spelling in `spellings`, and their values.
  std::vector<std::string> Without(const std::vector<std::string>& args,
                                   const std::vector<std::string>& spellings) const;

  // The --help text: the synopsis, the description, each positional and each flag with a help
  // (its spellings, its value's kind or choices, its default, its variable), and the footer.
  std::string Help() const;

 private:
  struct Row {
    FlagSpec spec;
    std::vector<std::string> spellings;
    std::string variable;       // empty: none
    std::string default_value;  // with show_default: the target's value at construction
  };

  // The row of the flag spelled `name`, or null.
  const Row* Find(std::string_view name) const;
  // `arg` split into the flag's spelling and its attached value ("--a=1", "-r3"); the row is
  // null when `arg` is no flag's.
  struct Split {
    const Row* row = nullptr;
    std::string_view name;
    std::optional<std::string_view> value;
  };
  Split SplitFlag(std::string_view arg) const;
  // `arg` into the next positional, counted by `next`.
  Status TakePositional(const std::string& arg, size_t& next) const;
  // The flag args[i] (and its value, args[i + 1] when not attached: `i` moves past it) into its
  // target, marked in `seen` and in parsed.own.
  Status ReadFlag(const std::vector<std::string>& args, size_t& i, std::vector<bool>& seen,
                  ParsedFlags& parsed) const;
  // Each flag not seen on the line from its variable, where that is set and not empty.
  Status ReadVariables(std::vector<bool>& seen) const;

  CommandSpec command_;
  std::vector<Row> rows_;
  std::map<std::string, size_t, std::less<>> by_spelling_;  // each spelling's row
};

}  // namespace ddprun
