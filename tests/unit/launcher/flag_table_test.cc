// ddprun's flag table as a whole (flag_table.cc, flag_spec.h): each spelling is one flag's, each
// PET_ variable fills its flag, and the README documents every flag there is and no other.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "ddprun/base/flag_parser.h"
#include "raw_options.h"
#include "support/test_paths.h"

using namespace ddprun;

namespace {

std::string ReadReadme() {
  std::ifstream file(std::string(ddprun::testing::paths::kSourceDir) + "/README.md");
  std::stringstream text;
  text << file.rdbuf();
  REQUIRE(!text.str().empty());
  return text.str();
}

// The README's section that starts with `heading`, up to the next "## ".
std::string Section(const std::string& readme, const std::string& heading) {
  const size_t start = readme.find("\n" + heading + "\n");
  REQUIRE(start != std::string::npos);
  const size_t end = readme.find("\n## ", start + heading.size() + 1);
  return readme.substr(start, end - start);
}

// The flags the first column of a Markdown table's rows names ("| `--a=N`, `--b` | ...").
std::set<std::string> FlagsOfTable(const std::string& section) {
  std::set<std::string> flags;
  std::istringstream lines(section);
  const std::regex flag("`(--?[a-z][a-z_-]*)");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `-", 0) != 0) continue;
    const std::string first_column = line.substr(0, line.find(" | "));
    for (std::sregex_iterator it(first_column.begin(), first_column.end(), flag), end; it != end;
         ++it) {
      flags.insert((*it)[1]);
    }
  }
  return flags;
}

std::map<std::string, const FlagSpec*> BySpelling(const std::vector<FlagSpec>& table) {
  std::map<std::string, const FlagSpec*> spellings;
  for (const FlagSpec& flag : table) {
    for (const std::string& spelling : Spellings(flag)) spellings[spelling] = &flag;
  }
  return spellings;
}

}  // namespace

TEST_CASE("every spelling of a flag is that flag's alone, in both of torchrun's spellings") {
  RawOptions raw;
  const std::vector<FlagSpec> table = FlagTable(raw);
  std::map<std::string, std::string> owner;
  for (const FlagSpec& flag : table) {
    INFO(flag.name);
    CHECK(flag.name.substr(0, 2) == "--");
    for (const std::string& spelling : Spellings(flag)) {
      INFO(spelling);
      CHECK(owner.emplace(spelling, std::string(flag.name)).second);
    }
  }
  CHECK(owner.at("--nproc-per-node") == "--nproc_per_node");
  CHECK(owner.at("--token_file") == "--token-file");
  CHECK(owner.at("--run-id") == "--rdzv_id");
  CHECK(owner.at("-r") == "--redirects");
  CHECK(owner.count("--standalone") == 1);
  CHECK(PetVariable("--nproc_per_node") == "PET_NPROC_PER_NODE");
  CHECK(PetVariable("--token-file") == "PET_TOKEN_FILE");
}

TEST_CASE("each flag's PET_ variable fills what the flag would") {
  RawOptions probe;
  const size_t rows = FlagTable(probe).size();
  for (size_t row = 0; row < rows; ++row) {
    RawOptions raw;
    const std::vector<FlagSpec> table = FlagTable(raw);  // its targets are raw's fields
    const FlagSpec& flag = table[row];
    if (!flag.pet) continue;
    const std::string variable = PetVariable(flag.name);
    INFO(variable);
    const std::string value = !flag.choices.empty() ? flag.choices.back()
                              : std::holds_alternative<std::string*>(flag.target) ? "from-env"
                              : std::holds_alternative<bool*>(flag.target)        ? "1"
                                                                                  : "7";
    ::setenv(variable.c_str(), value.c_str(), 1);
    REQUIRE(FlagParser(CommandSpec{.flags = table}).Parse({}).ok());
    ::unsetenv(variable.c_str());
    std::visit(
        [&](auto* field) {
          using Field = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<Field, std::string>) {
            CHECK(*field == value);
          } else if constexpr (std::is_same_v<Field, bool>) {
            CHECK(*field);
          } else {
            CHECK(*field == 7);
          }
        },
        flag.target);
  }
}

TEST_CASE("the README names every flag ddprun has, and the migration table no flag it lacks") {
  RawOptions raw;
  const std::vector<FlagSpec> table = FlagTable(raw);
  const auto spellings = BySpelling(table);
  const std::string readme = ReadReadme();
  const std::set<std::string> migration =
      FlagsOfTable(Section(readme, "## Migrating from torchrun"));
  const std::set<std::string> own = FlagsOfTable(Section(readme, "## Using ddprun"));
  REQUIRE(migration.size() > 30);
  for (const std::string& flag : migration) {
    INFO("the migration table names " << flag);
    CHECK(spellings.count(flag) == 1);
  }
  for (const FlagSpec& flag : table) {
    INFO(flag.name << " is in neither of the README's flag tables");
    const std::vector<std::string> names = Spellings(flag);
    CHECK(std::any_of(names.begin(), names.end(), [&](const std::string& name) {
      return migration.count(name) > 0 || own.count(name) > 0;
    }));
  }
}
