// FlagParser's reading of a command line; see flag_parser.h. Its --help is flag_help.cc's.
#include "ddprun/base/flag_parser.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

bool IsHelp(std::string_view arg) { return arg == "-h" || arg == "--help"; }

std::optional<bool> ParseBool(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

std::string Quoted(std::string_view value) { return "'" + std::string(value) + "'"; }

Status CheckMinimum(const FlagSpec& flag, double value, std::string_view text) {
  if (flag.minimum && value < *flag.minimum) {
    char minimum[32];
    std::snprintf(minimum, sizeof minimum, "%g", *flag.minimum);
    return InvalidArgumentError(std::string(flag.name) + " must be at least " + minimum + ", not " +
                                Quoted(text));
  }
  return Status::Ok();
}

// `value` into the flag's target; the error names the flag and the value.
Status Store(const FlagSpec& flag, std::string_view value) {
  const std::string name(flag.name);
  if (!flag.choices.empty() &&
      std::find(flag.choices.begin(), flag.choices.end(), value) == flag.choices.end()) {
    std::string choices;
    for (const std::string& choice : flag.choices) {
      choices += (choices.empty() ? "" : ", ") + choice;
    }
    return InvalidArgumentError(name + " must be one of " + choices + ", not " + Quoted(value));
  }
  return std::visit(
      [&](auto* target) -> Status {
        using Target = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<Target, std::string>) {
          target->assign(value);
        } else if constexpr (std::is_same_v<Target, bool>) {
          auto parsed = ParseBool(value);
          if (!parsed) {
            return InvalidArgumentError(name + " is true or false (or given alone), not " +
                                        Quoted(value));
          }
          *target = *parsed;
        } else if constexpr (std::is_same_v<Target, int>) {
          auto parsed = ParseInteger<int>(value);
          if (!parsed) {
            return InvalidArgumentError(name + " takes a whole number, not " + Quoted(value));
          }
          if (Status s = CheckMinimum(flag, *parsed, value); !s.ok()) return s;
          *target = *parsed;
        } else {
          auto parsed = ParseNumber(value);
          if (!parsed) return InvalidArgumentError(name + " takes a number, not " + Quoted(value));
          if (Status s = CheckMinimum(flag, *parsed, value); !s.ok()) return s;
          *target = *parsed;
        }
        return Status::Ok();
      },
      flag.target);
}

bool TakesValue(const FlagSpec& flag) { return !std::holds_alternative<bool*>(flag.target); }

std::string DefaultOf(const FlagSpec& flag) {
  return std::visit(
      [](auto* target) -> std::string {
        using Target = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<Target, std::string>) {
          return *target;
        } else if constexpr (std::is_same_v<Target, bool>) {
          return *target ? "true" : "false";
        } else if constexpr (std::is_same_v<Target, int>) {
          return std::to_string(*target);
        } else {
          char text[32];
          std::snprintf(text, sizeof text, "%g", *target);
          return text;
        }
      },
      flag.target);
}

}  // namespace

FlagParser::FlagParser(CommandSpec spec) : command_(std::move(spec)) {
  rows_.reserve(command_.flags.size());
  for (FlagSpec& flag : command_.flags) {
    Row row{std::move(flag), {}, {}, {}};
    row.spellings = Spellings(row.spec);
    row.variable = VariableOf(row.spec);
    if (row.spec.show_default) row.default_value = DefaultOf(row.spec);  // only --help shows it
    for (const std::string& spelling : row.spellings) by_spelling_.emplace(spelling, rows_.size());
    rows_.push_back(std::move(row));
  }
  command_.flags.clear();
}

const FlagParser::Row* FlagParser::Find(std::string_view name) const {
  auto it = by_spelling_.find(name);
  return it == by_spelling_.end() ? nullptr : &rows_[it->second];
}

FlagParser::Split FlagParser::SplitFlag(std::string_view arg) const {
  Split split;
  if (arg.size() < 2 || arg[0] != '-' || arg == "--") return split;
  if (arg[1] == '-') {
    const size_t equals = arg.find('=');
    split.name = arg.substr(0, equals);
    if (equals != std::string_view::npos) split.value = arg.substr(equals + 1);
  } else {
    split.name = arg.substr(0, 2);  // "-r3", "-r=3"
    if (arg.size() > 2) split.value = arg.substr(arg[2] == '=' ? 3 : 2);
  }
  split.row = Find(split.name);
  return split;
}

Result<ParsedFlags> FlagParser::Parse(const std::vector<std::string>& args) const {
  ParsedFlags parsed;
  std::vector<bool> seen(rows_.size(), false);
  size_t positional = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool dashes = arg == "--";
    if (dashes || arg.size() < 2 || arg[0] != '-') {
      // The program and its arguments; or a positional, or all that follow "--".
      const size_t first = dashes ? i + 1 : i;
      if (command_.program_follows) {
        parsed.program.assign(args.begin() + static_cast<std::ptrdiff_t>(first), args.end());
        break;
      }
      if (!dashes) {
        RETURN_IF_ERROR(TakePositional(arg, positional));
        continue;
      }
      for (size_t j = first; j < args.size(); ++j) {
        RETURN_IF_ERROR(TakePositional(args[j], positional));
      }
      break;
    }
    if (IsHelp(arg)) {
      parsed.help = true;
      return parsed;
    }
    RETURN_IF_ERROR(ReadFlag(args, i, seen, parsed));
  }
  RETURN_IF_ERROR(ReadVariables(seen));
  for (size_t row_index = 0; row_index < rows_.size(); ++row_index) {
    const Row& row = rows_[row_index];
    if (seen[row_index]) {
      parsed.given.insert(row.spellings.begin(), row.spellings.end());
    } else if (row.spec.required) {
      return InvalidArgumentError(std::string(row.spec.name) + " is required");
    }
  }
  for (size_t i = positional; i < command_.positionals.size(); ++i) {
    if (command_.positionals[i].required) {
      return InvalidArgumentError(std::string(command_.positionals[i].name) + " is required");
    }
  }
  return parsed;
}

Status FlagParser::TakePositional(const std::string& arg, size_t& next) const {
  if (next >= command_.positionals.size()) {
    return InvalidArgumentError("unexpected argument " + Quoted(arg));
  }
  *command_.positionals[next++].target = arg;
  return Status::Ok();
}

Status FlagParser::ReadFlag(const std::vector<std::string>& args, size_t& i,
                            std::vector<bool>& seen, ParsedFlags& parsed) const {
  const Split split = SplitFlag(args[i]);
  if (split.row == nullptr) {
    return InvalidArgumentError("unrecognized option " + std::string(split.name));
  }
  const FlagSpec& flag = split.row->spec;
  parsed.own.push_back(args[i]);
  std::string_view value;
  if (split.value) {
    value = *split.value;
  } else if (!TakesValue(flag)) {
    value = "true";
  } else {
    if (i + 1 >= args.size() || args[i + 1] == "--" || SplitFlag(args[i + 1]).row != nullptr) {
      return InvalidArgumentError(std::string(split.name) + " needs a value");
    }
    value = args[++i];
    parsed.own.push_back(args[i]);
  }
  const size_t row_index = static_cast<size_t>(split.row - rows_.data());
  if (seen[row_index] && TakesValue(flag)) {
    return InvalidArgumentError(std::string(flag.name) + " is given more than once; give it once");
  }
  seen[row_index] = true;
  return Store(flag, value);
}

Status FlagParser::ReadVariables(std::vector<bool>& seen) const {
  for (size_t row_index = 0; row_index < rows_.size(); ++row_index) {
    const Row& row = rows_[row_index];
    if (seen[row_index] || row.variable.empty()) continue;
    const char* value = std::getenv(row.variable.c_str());
    if (value == nullptr || *value == '\0') continue;
    if (Status s = Store(row.spec, value); !s.ok()) {
      return InvalidArgumentError(row.variable + ": " + s.message());
    }
    seen[row_index] = true;
  }
  return Status::Ok();
}

std::vector<std::string> FlagParser::Without(const std::vector<std::string>& args,
                                             const std::vector<std::string>& spellings) const {
  std::vector<const Row*> removed;
  for (const std::string& spelling : spellings) removed.push_back(Find(spelling));
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    const Split split = SplitFlag(args[i]);
    if (split.row == nullptr ||
        std::find(removed.begin(), removed.end(), split.row) == removed.end()) {
      kept.push_back(args[i]);
      continue;
    }
    if (!split.value && TakesValue(split.row->spec)) ++i;  // its value
  }
  return kept;
}

}  // namespace ddprun
