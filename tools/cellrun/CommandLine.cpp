//===- CommandLine.cpp - Subcommands and their command lines --------------===//
#include "CommandLine.h"

#include <iostream>

namespace cellrun::tool {

std::optional<int> parseCommandLine(CLI::App &app,
                                    const std::vector<std::string> &args) {
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp &) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::ParseError &error) {
    std::cerr << app.get_name() << ": " << error.what() << " ("
              << app.get_name() << " --help)\n";
    return kExitUsage;
  }
  return std::nullopt;
}

} // namespace cellrun::tool
