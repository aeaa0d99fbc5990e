//===- serve_requests.cpp - An application on the installed runtime ------===//
//
// Loads an artifact, prints what it holds (describeModel: one line per cell,
// "cell <name> <batch sizes> <inputs>", as `cellrun inspect --summary`
// shows it), serves every request of a JSON-lines file on the CPU through
// the public Engine API, and writes one line per request:
//   <id> <output name> <value> <value> ...   (values with 9 digits)
// so that a test can compare them with what `cellrun run` computed.
//
//   serve_requests MODEL.cellpack REQUESTS.jsonl OUT.txt
//
//===----------------------------------------------------------------------===//
#include "cellrun/Engine.h"
#include "cellrun/Model.h"

#include <cstdio>
#include <fstream>
#include <future>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: serve_requests MODEL REQUESTS OUT\n");
    return 2;
  }
  auto artifact = cellrun::loadArtifact(argv[1]);
  if (!artifact.ok()) {
    std::fprintf(stderr, "%s\n", artifact.status().message().c_str());
    return 1;
  }
  cellrun::ModelInfo model = cellrun::describeModel(*artifact.value());
  std::printf("model %s (%s, %s)\n", model.name.c_str(),
              cellrun::unfoldingName(model.unfolding),
              cellrun::precisionName(model.precision));
  for (const cellrun::CellInfo &cell : model.cells) {
    std::string sizes, inputs;
    for (uint32_t size : cell.batchSizes)
      sizes += (sizes.empty() ? "" : ",") + std::to_string(size);
    for (const cellrun::CellTensorInfo &input : cell.inputs)
      inputs += " " + input.name + ":" + input.role + ":" +
                cellrun::elementTypeName(input.type);
    std::printf("cell %s %s%s\n", cell.name.c_str(), sizes.c_str(),
                inputs.c_str());
  }
  cellrun::EngineOptions options;
  options.executor.device = cellrun::DeviceKind::Cpu;
  auto engine = cellrun::Engine::create(artifact.value(), options);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().message().c_str());
    return 1;
  }
  std::ifstream input(argv[2]);
  std::vector<std::future<cellrun::RequestResult>> pending;
  std::string line;
  while (std::getline(input, line)) {
    if (line.empty())
      continue;
    auto request = (*engine)->parser().parse(
        line, "line " + std::to_string(pending.size() + 1));
    if (!request.ok()) {
      std::fprintf(stderr, "%s\n", request.status().message().c_str());
      return 1;
    }
    pending.push_back((*engine)->submit(std::move(request).value()));
  }
  std::FILE *out = std::fopen(argv[3], "w");
  if (!out)
    return 1;
  for (auto &future : pending) {
    cellrun::RequestResult result = future.get();
    if (!result.status.isOk()) {
      std::fprintf(stderr, "%s\n", result.status.message().c_str());
      return 1;
    }
    for (const cellrun::OutputTensor &tensor : result.outputs) {
      std::fprintf(out, "%s %s", result.id.c_str(), tensor.name.c_str());
      for (float value : tensor.floats)
        std::fprintf(out, " %.9g", value);
      for (int64_t value : tensor.integers)
        std::fprintf(out, " %lld", static_cast<long long>(value));
      std::fprintf(out, "\n");
    }
  }
  std::fclose(out);
  std::printf("served %zu requests\n", pending.size());
  return 0;
}
