// FlagParser::Help: a command's --help, written from its table; see flag_parser.h.
#include <string>

#include "ddprun/base/flag_parser.h"

namespace ddprun {
namespace {

// What a flag's value is, after its spellings: " {a,b}", " TEXT", " INT", " NUMBER", or nothing
// for a flag that takes none.
std::string KindOf(const FlagSpec& flag) {
  if (!flag.choices.empty()) {
    std::string choices;
    for (const std::string& choice : flag.choices) choices += (choices.empty() ? "" : ",") + choice;
    return " {" + choices + "}";
  }
  return std::visit(
      [](auto* target) -> std::string {
        using Target = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<Target, std::string>) return " TEXT";
        if constexpr (std::is_same_v<Target, int>) return " INT";
        if constexpr (std::is_same_v<Target, double>) return " NUMBER";
        return "";
      },
      flag.target);
}

}  // namespace

std::string FlagParser::Help() const {
  std::string help = std::string(command_.synopsis) + "\n";
  if (!command_.description.empty()) help += "\n" + std::string(command_.description) + "\n";
  if (!command_.positionals.empty()) {
    help += "\nArguments:\n";
    for (const PositionalSpec& positional : command_.positionals) {
      help += "  " + std::string(positional.name) + (positional.required ? "" : " (optional)") +
              "\n      " + std::string(positional.help) + "\n";
    }
  }
  help += "\nOptions:\n  -h, --help\n      Print this help and exit\n";
  for (const Row& row : rows_) {
    if (row.spec.help.empty()) continue;  // refused torchrun flags: defined for their message
    std::string names;
    for (const std::string& spelling : row.spellings)
      names += (names.empty() ? "" : ", ") + spelling;
    std::string notes;
    auto note = [&notes](const std::string& text) { notes += (notes.empty() ? "" : "; ") + text; };
    if (row.spec.required) note("required");
    if (row.spec.show_default && !row.default_value.empty()) note("default: " + row.default_value);
    if (!row.variable.empty()) note("env: " + row.variable);
    help += "  " + names + KindOf(row.spec) + (notes.empty() ? "" : "  (" + notes + ")") +
            "\n      " + std::string(row.spec.help) + "\n";
  }
  if (!command_.footer.empty()) help += "\n" + std::string(command_.footer) + "\n";
  return help;
}

}  // namespace ddprun
