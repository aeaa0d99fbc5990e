//===- CommandLine.cpp - The tiny argument parser of cellrun --------------===//
#include "CommandLine.h"

#include <algorithm>

namespace cellrun::tool {

Result<ParsedArgs> parseArgs(const std::vector<std::string> &args,
                             const std::vector<OptionSpec> &specs) {
  ParsedArgs parsed;
  bool optionsEnded = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (optionsEnded || arg.size() < 2 || arg.compare(0, 2, "--") != 0 ||
        arg == "-") {
      parsed.positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    size_t equals = arg.find('=');
    std::string name = arg.substr(
        2, equals == std::string::npos ? std::string::npos : equals - 2);
    auto spec =
        std::find_if(specs.begin(), specs.end(),
                     [&](const OptionSpec &s) { return s.name == name; });
    if (spec == specs.end())
      return Status(StatusCode::InvalidArgument,
                    "unknown option '--" + name + "'");
    if (!spec->takesValue) {
      if (equals != std::string::npos)
        return Status(StatusCode::InvalidArgument,
                      "option '--" + name + "' takes no value");
      parsed.options[name] = "";
    } else if (equals != std::string::npos) {
      parsed.options[name] = arg.substr(equals + 1);
    } else if (i + 1 < args.size()) {
      parsed.options[name] = args[++i];
    } else {
      return Status(StatusCode::InvalidArgument,
                    "option '--" + name + "' needs a value");
    }
  }
  return parsed;
}

std::string formatOptions(const std::vector<OptionSpec> &specs) {
  std::vector<std::string> heads;
  size_t width = 0;
  for (const OptionSpec &spec : specs) {
    heads.push_back("--" + spec.name +
                    (spec.takesValue ? "=" + spec.valueName : ""));
    width = std::max(width, heads.back().size());
  }
  std::string text;
  for (size_t i = 0; i < specs.size(); ++i)
    text += "  " + heads[i] + std::string(width - heads[i].size() + 2, ' ') +
            specs[i].help + "\n";
  return text;
}

} // namespace cellrun::tool
