// The spellings and variables of a flag; see flag_spec.h.
#include "ddprun/base/flag_spec.h"

#include <algorithm>
#include <cctype>

namespace ddprun {
namespace {

// "--a_b" <-> "--a-b"; a short option or a name of one word has none.
std::string TwinOf(std::string_view name) {
  if (name.size() < 3 || name.substr(0, 2) != "--") return "";
  std::string twin(name);
  const bool underscores = twin.find('_') != std::string::npos;
  const bool dashes = twin.find('-', 2) != std::string::npos;
  if (!underscores && !dashes) return "";
  std::replace(twin.begin() + 2, twin.end(), underscores ? '_' : '-', underscores ? '-' : '_');
  return twin;
}

void Append(std::vector<std::string>& names, std::string_view name) {
  names.emplace_back(name);
  if (std::string twin = TwinOf(name); !twin.empty()) names.push_back(std::move(twin));
}

}  // namespace

std::string PetVariable(std::string_view name) {
  std::string variable = "PET_";
  for (char c : name.substr(name.find_first_not_of('-'))) {
    variable += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return variable;
}

std::string VariableOf(const FlagSpec& flag) {
  if (!flag.pet) return "";
  return flag.variable.empty() ? PetVariable(flag.name) : std::string(flag.variable);
}

std::vector<std::string> Spellings(const FlagSpec& flag) {
  std::vector<std::string> names;
  for (std::string_view alias : flag.aliases) {
    if (alias.size() == 2) Append(names, alias);  // "-r": listed first, as in --help
  }
  Append(names, flag.name);
  for (std::string_view alias : flag.aliases) {
    if (alias.size() != 2) Append(names, alias);
  }
  return names;
}

}  // namespace ddprun
