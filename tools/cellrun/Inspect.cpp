//===- Inspect.cpp - `cellrun inspect` ------------------------------------===//
//
// Loads the artifact with every check of the loader and of the engine (the
// unfolding, every batch plan prepared: Engine::check); prints it as JSON
// (ArtifactJson) or, with --summary, one table row per cell type: batch
// sizes, kernels, weight megabytes and the code it carries.
//
//===----------------------------------------------------------------------===//
#include "Inspect.h"

#include "cellrun/Artifact.h"
#include "cellrun/ArtifactJson.h"
#include "cellrun/Engine.h"

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

void printSummary(const LoadedArtifact &artifact) {
  const cellpack::Model &model = artifact.model();
  auto text = [](const flatbuffers::String *s) {
    return s && s->size() ? s->str() : std::string("-");
  };
  std::cout << "artifact  " << artifact.displayName() << " ("
            << artifact.fileSize() << " bytes, "
            << megabytes(artifact.fileSize()) << " MB, format "
            << artifact.formatVersion() << ")\n"
            << "model     " << text(model.model_name()) << " ("
            << cellpack::EnumNameStructure(model.unfolding()->structure())
            << ", " << cellpack::EnumNamePrecision(model.precision())
            << "), produced by " << text(model.producer()) << "\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"cell", "batch sizes", "kernels", "weights MB", "cubins", "ptx"}};
  for (const cellpack::CellType *cell : artifact.cells()) {
    std::vector<std::string> sizes, cubins;
    for (uint32_t size : artifact.batchSizes(*cell))
      sizes.push_back(std::to_string(size));
    uint64_t weightBytes = 0;
    for (uint32_t i = 0; cell->weights() && i < cell->weights()->size(); ++i)
      if (const auto *data = cell->weights()->Get(i)->data())
        weightBytes += data->size();
    const cellpack::CellCode &code = artifact.code(*cell);
    for (uint32_t i = 0; code.cubins() && i < code.cubins()->size(); ++i)
      cubins.push_back(code.cubins()->Get(i)->arch()->str());
    uint32_t kernels = code.kernel_names() ? code.kernel_names()->size() : 0;
    rows.push_back(
        {cell->name()->str(), join(sizes, ","), std::to_string(kernels),
         megabytes(weightBytes), join(cubins, ","),
         code.ptx() && code.ptx()->size() ? text(code.ptx_arch()) : "-"});
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
    printSummary(**artifact);
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
