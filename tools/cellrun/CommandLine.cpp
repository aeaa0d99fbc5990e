//===- CommandLine.cpp - Subcommands and their command lines --------------===//
#include "CommandLine.h"

#include <algorithm>
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

std::string cudaOnlyFlagsNote(const ExecutorOptions &executor) {
  if (executor.device != DeviceKind::Cpu)
    return "";
  std::vector<const char *> flags;
  if (executor.pinnedResults)
    flags.push_back("--pinned-results");
  if (executor.cudaGraphs)
    flags.push_back("--cuda-graphs");
  if (executor.timeDevice)
    flags.push_back("--time-device");
  if (flags.empty())
    return "";
  std::string named = flags[0];
  for (size_t i = 1; i < flags.size(); ++i)
    named += (i + 1 == flags.size() ? " and " : ", ") + std::string(flags[i]);
  return named + (flags.size() == 1 ? " has" : " have") +
         " no effect on the cpu backend";
}

std::optional<uint32_t> poolRowsOfBudget(uint64_t budgetBytes,
                                         uint64_t bytesPerRow,
                                         std::string &error) {
  uint64_t rows = budgetBytes / std::max<uint64_t>(bytesPerRow, 1);
  if (rows < 2) {
    error = "--memory-budget " + std::to_string(budgetBytes) +
            " bytes is less than two rows of the model's state (" +
            std::to_string(bytesPerRow) + " bytes a row)";
    return std::nullopt;
  }
  return static_cast<uint32_t>(std::min<uint64_t>(rows, 1u << 28));
}

} // namespace cellrun::tool
