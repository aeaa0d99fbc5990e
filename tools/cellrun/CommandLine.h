//===- CommandLine.h - The tiny argument parser of cellrun ------*- C++ -*-===//
//
// Each subcommand lists its options (name, whether it takes a value, help
// line); parseArgs splits its arguments into options and positionals:
// `--name`, `--name=value`, `--name value`, and `--` to end the options.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_COMMANDLINE_H
#define CELLRUN_TOOLS_COMMANDLINE_H

#include "cellrun/Status.h"

#include <map>
#include <string>
#include <vector>

namespace cellrun::tool {

/// Exit codes of cellrun.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1; // the command ran and failed (bad artifact)
constexpr int kExitUsage = 2;   // the command line is wrong

struct OptionSpec {
  std::string name; // without the leading "--"
  bool takesValue;
  std::string valueName; // shown in the help, e.g. "N"
  std::string help;
};

struct ParsedArgs {
  std::map<std::string, std::string> options; // a flag maps to ""
  std::vector<std::string> positionals;

  bool has(const std::string &name) const { return options.count(name); }
};

/// InvalidArgument naming the offending argument for an unknown option, a
/// missing value or a value given to a flag.
Result<ParsedArgs> parseArgs(const std::vector<std::string> &args,
                             const std::vector<OptionSpec> &specs);

/// The options as help lines, two-space indented and aligned.
std::string formatOptions(const std::vector<OptionSpec> &specs);

/// One subcommand of cellrun: `cellrun <name> ARGS...`.
struct Subcommand {
  const char *name;
  const char *summary; // one line for `cellrun --help`
  int (*run)(const std::vector<std::string> &args); // returns the exit code
};

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_COMMANDLINE_H
