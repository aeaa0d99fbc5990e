//===- cellrun.cpp - The runtime's command line ---------------------------===//
//
// cellrun SUBCOMMAND ARGS...: dispatches to the subcommands in kSubcommands
// (`inspect`, `devices`, `run`, `serve`, `bench`).
// Exit codes: 0 success, 1 the command failed, 2 a wrong command line.
//
//===----------------------------------------------------------------------===//
#include "Allocator.h"
#include "Bench.h"
#include "CommandLine.h"
#include "Devices.h"
#include "Inspect.h"
#include "Run.h"
#include "Serve.h"
#include "cellrun/Model.h"

#include <iostream>
#include <string>
#include <vector>

using namespace cellrun::tool;

namespace {

const Subcommand kSubcommands[] = {
    {"inspect", "check a .cellpack and print it as JSON (or --summary)",
     runInspect},
    {"devices", "say which backend --device cuda|cpu|auto uses here",
     runDevices},
    {"run", "serve a file of requests offline and print a summary", runRun},
    {"serve", "serve the model over KServe v2 HTTP/gRPC with metrics",
     runServe},
    {"bench", "open-loop load: every policy and the PyTorch peer side by side",
     runBench},
};

void printHelp(std::ostream &out) {
  out << "Usage: cellrun SUBCOMMAND [OPTIONS] ARGS...\n\n"
         "The cellular-batching runtime for models compiled by cellc.\n\n"
         "Subcommands:\n";
  for (const Subcommand &sub : kSubcommands)
    out << "  " << sub.name << "  " << sub.summary << "\n";
  out << "\nOptions:\n"
         "  --help     show this help ('cellrun SUBCOMMAND --help' for one)\n"
         "  --version  show the version and the artifact format it reads\n";
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    printHelp(std::cerr);
    return kExitUsage;
  }
  const std::string &command = args[0];
  if (command == "--help" || command == "-h" || command == "help") {
    printHelp(std::cout);
    return kExitOk;
  }
  if (command == "--version") {
    std::cout << "cellrun " << CELLRUN_VERSION << " (cellpack format "
              << cellrun::supportedFormatVersion() << ", " << allocatorName()
              << ")\n";
    return kExitOk;
  }
  for (const Subcommand &sub : kSubcommands)
    if (command == sub.name)
      return sub.run(std::vector<std::string>(args.begin() + 1, args.end()));
  std::cerr << "cellrun: unknown subcommand '" << command
            << "'; run 'cellrun --help' for the list\n";
  return kExitUsage;
}
