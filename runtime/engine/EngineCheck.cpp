//===- EngineCheck.cpp - Everything an engine checks of an artifact -------===//
//
// What Engine::create refuses beyond the loader's checks: an unfolding the
// parser cannot use, and a batch plan the executor cannot prepare (a kernel
// region whose ops do not fit their values or its step's operands, a GEMM
// the cpu backend cannot run). `cellrun inspect` runs it, so that it
// refuses every artifact a server would. A custom unfolder this process
// has not registered is not the artifact's fault (the program that serves
// it registers it): then the structure is checked without the parser.
//
//===----------------------------------------------------------------------===//
#include "cellrun/Engine.h"
#include "cellrun/Unfolder.h"
#include "exec/Executor.h"
#include "request/ModelStructure.h"

using namespace cellrun;

Status Engine::check(std::shared_ptr<const LoadedArtifact> artifact) {
  auto structure = analyzeModel(*artifact);
  if (!structure.ok())
    return structure.status();
  bool unregistered = structure->kind == cellpack::Structure::Custom &&
                      !findUnfolder(structure->unfolder);
  if (!unregistered)
    if (auto parser = RequestParser::create(artifact); !parser.ok())
      return parser.status();
  ExecutorOptions options;
  options.device = DeviceKind::Cpu;
  options.threads = 1;
  auto executor = Executor::create(std::move(artifact), 2, options);
  return executor.ok() ? Status::ok() : executor.status();
}
