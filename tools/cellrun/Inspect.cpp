//===- Inspect.cpp - `cellrun inspect` ------------------------------------===//
//
// Loads the artifact with every check of the loader and of the engine (the
// unfolding, every batch plan prepared: Engine::check); prints it as JSON
// (ArtifactJson) or, with --summary, one table row per cell type: batch
// sizes, kernels, weight megabytes and the code it carries.
//
//===----------------------------------------------------------------------===//
#include "Inspect.h"

#include "cellrun/ArtifactJson.h"
#include "cellrun/Engine.h"
#include "cellrun/Model.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace cellrun::tool {
namespace {

std::string megabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(bytes) / 1e6);
  return text;
}

std::string join(const std::vector<std::string> &parts, const char *sep) {
  std::string text;
  for (const std::string &part : parts)
    text += (text.empty() ? "" : sep) + part;
  return text.empty() ? "-" : text;
}

/// Prints rows with every column padded to its widest cell.
void printTable(const std::vector<std::vector<std::string>> &rows) {
  std::vector<size_t> widths;
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      widths.resize(std::max(widths.size(), row.size()));
      widths[c] = std::max(widths[c], row[c].size());
    }
  for (const auto &row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c)
      line += row[c] + (c + 1 < row.size()
                            ? std::string(widths[c] - row[c].size() + 2, ' ')
                            : "");
    std::cout << line << "\n";
  }
}

void printSummary(const ModelInfo &model) {
  auto text = [](const std::string &s) { return s.empty() ? "-" : s; };
  std::cout << "artifact  " << model.source << " (" << model.fileBytes
            << " bytes, " << megabytes(model.fileBytes) << " MB, format "
            << model.formatVersion << ")\n"
            << "model     " << text(model.name) << " ("
            << unfoldingName(model.unfolding) << ", "
            << precisionName(model.precision) << "), produced by "
            << text(model.producer) << "\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"cell", "batch sizes", "kernels", "weights MB", "cubins", "ptx"}};
  for (const CellInfo &cell : model.cells) {
    std::vector<std::string> sizes;
    for (uint32_t size : cell.batchSizes)
      sizes.push_back(std::to_string(size));
    rows.push_back(
        {cell.name, join(sizes, ","), std::to_string(cell.kernelCount),
         megabytes(cell.weightBytes), join(cell.gpuArchitectures, ","),
         text(cell.ptxArchitecture)});
  }
  printTable(rows);
}

} // namespace

int runInspect(const std::vector<std::string> &args) {
  CLI::App app("Checks the artifact completely and prints it as JSON (weights "
               "and kernel images as sizes only).",
               "cellrun inspect");
  std::string path;
  bool summary = false;
  app.add_option("model", path, "the artifact (.cellpack)")->required();
  app.add_flag("--summary", summary, "print a short table instead of JSON");
  if (auto exit = parseCommandLine(app, args))
    return *exit;
  auto artifact = loadArtifact(path);
  if (!artifact.ok()) {
    std::cerr << "cellrun: error: " << artifact.status().message() << "\n";
    return kExitFailure;
  }
  if (Status usable = Engine::check(artifact.value()); !usable.isOk()) {
    std::cerr << "cellrun: error: " << usable.message() << "\n";
    return kExitFailure;
  }
  if (summary)
    printSummary(describeModel(**artifact));
  else
    writeArtifactJson(**artifact, std::cout);
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "cellrun inspect: cannot write the output\n";
    return kExitFailure;
  }
  return kExitOk;
}

} // namespace cellrun::tool
