// Every option of every subcommand reads its value alike: an empty value (what a CI step passes
// when its variable is unset) is refused with exit 2 naming the option, never taken as "off"; a
// numeric option takes a decimal number of its type and range through one parser ("0x10" is not
// 16 anywhere); a repeated --axis is refused instead of dropping the first; and an unknown command
// is named even with --help. The options are found in each subcommand's --help, so that an
// option added later is held to the same rules without a line here.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

const auto scenario = shipped_scenario;

// Each subcommand with positional arguments that parse (they are never reached: option errors
// come first), and the value options its --help lists with their type ("TEXT", "INT", ...).
struct Command {
  std::string name, positionals;
};
const std::vector<Command>& commands() {
  static const std::vector<Command> c = {
      {"audit", scenario("quickstart.yaml")},
      {"bench", scenario("quickstart.yaml")},
      {"bisect", scenario("model-cpu.yaml")},
      {"report", scenario("quickstart.yaml")},
      {"diff", scenario("quickstart.yaml") + " " + scenario("quickstart.yaml")},
      {"info", ""},
      {"list", ""},
  };
  return c;
}

std::map<std::string, std::string> value_options(const std::string& command) {
  const CommandResult help = run_nvdet(command + " --help");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  std::map<std::string, std::string> out;
  // "  -k,--filter TEXT   ..." / "  --maxfail INT [0]  ...": the long name and the value type.
  static const std::regex option("^\\s+(?:-\\w,)?(--[a-z-]+)\\s+(TEXT|INT|UINT|FLOAT)\\b");
  std::istringstream in(help.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, option)) out[m[1]] = m[2];
  }
  return out;
}

TEST(OptionValues, AnEmptyValueIsRefusedForEveryOptionOfEveryCommand) {
  int checked = 0;
  for (const Command& c : commands()) {
    for (const auto& [option, type] : value_options(c.name)) {
      SCOPED_TRACE(c.name + " " + option);
      const CommandResult r = run_nvdet(c.name + " " + c.positionals + " " + option + " ''");
      EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
      EXPECT_NE(r.err.find(option), std::string::npos) << r.err;  // the option is named
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;     // in one sentence
      ++checked;
    }
  }
  // The options the issue named among them: each one found and checked above.
  for (const auto& [command, option] :
       std::vector<std::pair<std::string, std::string>>{{"audit", "--verify"},
                                                        {"audit", "--record"},
                                                        {"audit", "--report-dir"},
                                                        {"audit", "--dump"},
                                                        {"audit", "--shard"},
                                                        {"audit", "--maxfail"},
                                                        {"report", "--verify"},
                                                        {"bisect", "--backend"}}) {
    EXPECT_TRUE(value_options(command).count(option)) << command << " " << option;
  }
  EXPECT_GT(checked, 30);
}

TEST(OptionValues, AnEmptyPositionalIsRefused) {
  const CommandResult r = run_nvdet("audit ''");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs a value, got an empty one"), std::string::npos) << r.err;
}

// One parser for numbers: hex, a trailing word or an empty text is no number for any option.
TEST(OptionValues, EveryNumericOptionTakesOnlyADecimalNumber) {
  int checked = 0;
  for (const Command& c : commands()) {
    for (const auto& [option, type] : value_options(c.name)) {
      if (type != "INT" && type != "FLOAT") continue;
      for (const std::string bad : {"0x10", "16x", "1e3x", "nan"}) {
        SCOPED_TRACE(c.name + " " + option + " " + bad);
        const CommandResult r = run_nvdet(c.name + " " + c.positionals + " " + option + " " + bad);
        EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
        EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 5);  // audit --maxfail, --max-contexts; bench --warmup, --reps; diff --atol
  // --maxfail is one of them: 16 in decimal is accepted.
  const CommandResult ok =
      run_nvdet("audit " + scenario("quickstart.yaml") + " --maxfail 16 --list-contexts");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(OptionValues, ARepeatedAxisIsRefusedNotDropped) {
  const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") +
                                    " --axis batch=2 --axis batch=4 --list-contexts");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("axis 'batch' is given twice"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(OptionValues, AnUnknownCommandIsNamedEvenWithHelp) {
  for (const std::string args : {"frobnicate --help", "frobnicate", "audti --help"}) {
    SCOPED_TRACE(args);
    const CommandResult r = run_nvdet(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unknown command '" + args.substr(0, args.find(' ')) + "'"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");  // no help text as if the command existed
  }
  EXPECT_NE(run_nvdet("audti").err.find("did you mean 'audit'?"), std::string::npos);
  EXPECT_EQ(run_nvdet("--help").exit_code, 0);
}

}  // namespace
}  // namespace nvdet::testing
