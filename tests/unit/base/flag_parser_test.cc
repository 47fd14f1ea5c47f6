// FlagParser (flag_parser.h): how a command line is read against a table of flags.
#include "ddprun/base/flag_parser.h"

#include <stdlib.h>

#include <catch2/catch.hpp>

using namespace ddprun;

namespace {

// A small program's flags, like ddprun's: a string with a twin spelling and a short alias, an
// int with a minimum, a number, a bool, a choice, and one read from a variable of its own.
struct Values {
  std::string name = "default";
  int count = 1;
  double seconds = 2.5;
  bool verbose = false;
  std::string mode = "fast";
  std::string host = "127.0.0.1";
  std::string job;
};

CommandSpec Spec(Values& v, bool program_follows = false) {
  CommandSpec spec{
      .synopsis = "prog [OPTIONS]",
      .description = "A test program.",
      .footer = "Exit status: 0.",
      .flags = {{.name = "--run_name",
                 .aliases = {"-n", "--name"},
                 .help = "The name",
                 .target = &v.name,
                 .show_default = true},
                {.name = "--count", .help = "How many", .target = &v.count, .minimum = 0},
                {.name = "--seconds", .pet = false, .help = "How long", .target = &v.seconds},
                {.name = "--verbose", .aliases = {"-v"}, .help = "Say more", .target = &v.verbose},
                {.name = "--mode",
                 .help = "How",
                 .target = &v.mode,
                 .choices = {"fast", "slow"},
                 .show_default = true},
                {.name = "--host", .variable = "PROG_HOST", .help = "Where", .target = &v.host},
                {.name = "--hidden", .pet = false, .target = &v.job}},
      .program_follows = program_follows};
  if (!program_follows) {
    spec.positionals = {{.name = "JOB", .help = "The job", .target = &v.job, .required = false}};
  }
  return spec;
}

Result<ParsedFlags> ParseInto(Values& v, const std::vector<std::string>& args,
                              bool program_follows = false) {
  return FlagParser(Spec(v, program_follows)).Parse(args);
}

std::string ErrorOf(const std::vector<std::string>& args, bool program_follows = false) {
  Values v;
  auto parsed = ParseInto(v, args, program_follows);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
  return parsed.status().message();
}

}  // namespace

TEST_CASE("a flag takes its value after '=' or as the next argument, in every spelling") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--run_name=x"}, {"--run-name", "x"}, {"--name=x"}, {"-n", "x"}, {"-nx"}, {"-n=x"}}) {
    Values v;
    auto parsed = ParseInto(v, args);
    INFO(args.front());
    REQUIRE(parsed.ok());
    CHECK(v.name == "x");
    CHECK(parsed->Given("--run_name"));
    CHECK(parsed->Given("--name"));
    CHECK(parsed->Given("-n"));
    CHECK_FALSE(parsed->Given("--count"));
  }
}

TEST_CASE("values are converted, and a bad one is refused naming the flag and the value") {
  Values v;
  REQUIRE(ParseInto(v, {"--count=3", "--seconds", "0.25", "--mode=slow", "-v"}).ok());
  CHECK(v.count == 3);
  CHECK(v.seconds == 0.25);
  CHECK(v.mode == "slow");
  CHECK(v.verbose);
  CHECK(ErrorOf({"--count=3x"}) == "--count takes a whole number, not '3x'");
  CHECK(ErrorOf({"--seconds=soon"}) == "--seconds takes a number, not 'soon'");
  CHECK(ErrorOf({"--count=-1"}) == "--count must be at least 0, not '-1'");
  CHECK(ErrorOf({"--mode=medium"}) == "--mode must be one of fast, slow, not 'medium'");
  CHECK(ErrorOf({"--verbose=maybe"}) == "--verbose is true or false (or given alone), not 'maybe'");
}

TEST_CASE("a bool flag may say false and may repeat, but another flag given twice is refused") {
  Values v;
  v.verbose = true;
  REQUIRE(ParseInto(v, {"--verbose=false"}).ok());
  CHECK_FALSE(v.verbose);
  REQUIRE(ParseInto(v, {"-v", "--verbose"}).ok());
  CHECK(v.verbose);
  CHECK(ErrorOf({"--count=1", "--count", "2"}) == "--count is given more than once; give it once");
}

TEST_CASE("an unknown flag, a missing value and a value that is another flag are refused") {
  CHECK(ErrorOf({"--bogus"}) == "unrecognized option --bogus");
  CHECK(ErrorOf({"--bogus=1"}) == "unrecognized option --bogus");
  CHECK(ErrorOf({"-x"}) == "unrecognized option -x");
  CHECK(ErrorOf({"--count"}) == "--count needs a value");
  CHECK(ErrorOf({"--run_name", "--verbose"}) == "--run_name needs a value");
  CHECK(ErrorOf({"-n", "--", "x"}) == "-n needs a value");
  Values v;
  REQUIRE(ParseInto(v, {"--run_name", "-1"}).ok());  // not a flag: a value
  CHECK(v.name == "-1");
}

TEST_CASE("a flag not given is read from its variable, and the command line wins over it") {
  ::setenv("PET_COUNT", "7", 1);
  ::setenv("PROG_HOST", "10.0.0.1", 1);
  ::setenv("PET_SECONDS", "9", 1);  // --seconds has no variable
  ::setenv("PET_RUN_NAME", "", 1);  // empty: as if unset
  Values v;
  auto parsed = ParseInto(v, {"--host=h"});
  REQUIRE(parsed.ok());
  CHECK(v.count == 7);
  CHECK(parsed->Given("--count"));
  CHECK(v.host == "h");
  CHECK(v.seconds == 2.5);
  CHECK(v.name == "default");
  CHECK_FALSE(parsed->Given("--run_name"));
  ::setenv("PET_COUNT", "seven", 1);
  CHECK(ErrorOf({}) == "PET_COUNT: --count takes a whole number, not 'seven'");
  ::unsetenv("PET_COUNT");
  ::unsetenv("PROG_HOST");
  ::unsetenv("PET_SECONDS");
  ::unsetenv("PET_RUN_NAME");
}

TEST_CASE("with program_follows the first other argument starts the program, kept verbatim") {
  Values v;
  auto parsed =
      ParseInto(v, {"-v", "--count", "2", "train.py", "--count=5", "--help", "--", "x"}, true);
  REQUIRE(parsed.ok());
  CHECK(v.count == 2);
  CHECK(parsed->program == std::vector<std::string>{"train.py", "--count=5", "--help", "--", "x"});
  CHECK(parsed->own == std::vector<std::string>{"-v", "--count", "2"});

  auto after_dashes = ParseInto(v, {"--verbose", "--", "-prog", "a"}, true);
  REQUIRE(after_dashes.ok());
  CHECK(after_dashes->program == std::vector<std::string>{"-prog", "a"});
  CHECK(after_dashes->own == std::vector<std::string>{"--verbose"});

  auto none = ParseInto(v, {"--verbose"}, true);
  REQUIRE(none.ok());
  CHECK(none->program.empty());
}

TEST_CASE(
    "positionals are filled in order, and an extra one or a missing required one is refused") {
  Values v;
  REQUIRE(ParseInto(v, {"job-1", "--verbose"}).ok());
  CHECK(v.job == "job-1");
  CHECK(ErrorOf({"a", "b"}) == "unexpected argument 'b'");
  Values w;
  CommandSpec spec = Spec(w);
  spec.positionals.front().required = true;
  spec.flags.front().required = true;
  auto missing_flag = FlagParser(spec).Parse({"job"});
  REQUIRE_FALSE(missing_flag.ok());
  CHECK(missing_flag.status().message() == "--run_name is required");
  auto missing_job = FlagParser(spec).Parse({"--name=x"});
  REQUIRE_FALSE(missing_job.ok());
  CHECK(missing_job.status().message() == "JOB is required");
}

TEST_CASE("-h and --help ask for the help, which lists each shown flag, its default and variable") {
  Values v;
  auto parsed = ParseInto(v, {"--count=1", "--help", "--bogus"});
  REQUIRE(parsed.ok());
  CHECK(parsed->help);
  CHECK(ParseInto(v, {"-h"})->help);
  const std::string help = FlagParser(Spec(v)).Help();
  CHECK(help.rfind("prog [OPTIONS]\n\nA test program.\n", 0) == 0);
  CHECK(help.find("  -n, --run_name, --run-name, --name TEXT  (default: default; env: "
                  "PET_RUN_NAME)\n      The name\n") != std::string::npos);
  CHECK(help.find("  --mode {fast,slow}  (default: fast; env: PET_MODE)") != std::string::npos);
  CHECK(help.find("  --host TEXT  (env: PROG_HOST)") != std::string::npos);
  CHECK(help.find("  --seconds NUMBER\n") != std::string::npos);
  CHECK(help.find("  JOB (optional)\n      The job\n") != std::string::npos);
  CHECK(help.find("--hidden") == std::string::npos);
  CHECK(help.substr(help.size() - 16) == "Exit status: 0.\n");
}

TEST_CASE("Without drops the named flags, in any spelling, with their values") {
  Values v;
  const FlagParser parser(Spec(v));
  CHECK(parser.Without({"--name", "x", "-v", "--count=2", "-ny", "--run-name=z", "--mode", "slow"},
                       {"--run_name", "--mode"}) == std::vector<std::string>{"-v", "--count=2"});
}
