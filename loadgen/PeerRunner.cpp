//===- PeerRunner.cpp - The PyTorch peer on the same trace ----------------===//
#include "PeerRunner.h"
#include "Shell.h"

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

using namespace cellrun;
using namespace cellrun::loadgen;

const std::vector<std::string> &cellrun::loadgen::peerNames() {
  static const std::vector<std::string> names = {"pytorch", "onnxruntime"};
  return names;
}

Status cellrun::loadgen::choosePeerScript(const ModelInfo &model,
                                          const std::string &peersDir,
                                          const std::string &name,
                                          PeerOptions &peer) {
  switch (model.unfolding) {
  case UnfoldingKind::Chain:
    peer.script = peersDir + "/" + name + "_chain.py";
    break;
  case UnfoldingKind::Seq2Seq:
    peer.script = peersDir + "/" + name + "_seq2seq.py";
    peer.extra = " --bos " + std::to_string(model.beginToken) + " --eos " +
                 std::to_string(model.endToken);
    if (model.maxDecodeLength > 0) // 0: no limit of the model's
      peer.extra += " --max-decode " + std::to_string(model.maxDecodeLength);
    break;
  case UnfoldingKind::Tree:
    if (name != "pytorch")
      return Status(StatusCode::Unsupported,
                    "no " + name + " peer for trees (only pytorch)");
    peer.script = peersDir + "/pytorch_treelstm.py";
    break;
  case UnfoldingKind::Custom:
    return Status(StatusCode::Unsupported,
                  "no " + name + " peer for a custom unfolder's model");
  }
  if (!std::filesystem::exists(peer.script))
    return Status(StatusCode::Unsupported,
                  "no " + name + " peer for this model's structure: " +
                      peer.script + " does not exist");
  return Status::ok();
}

namespace {

/// Writes the trace for the peer to `tracePath`: each entry's request line
/// with its "arrival_s" added.
Status writePeerTrace(const std::vector<std::string> &lines,
                      const std::vector<TraceEntry> &trace,
                      const std::string &tracePath) {
  std::ofstream out(tracePath);
  char arrival[64];
  for (const TraceEntry &entry : trace) {
    const std::string &line = lines.at(entry.request);
    std::snprintf(arrival, sizeof(arrival), ", \"arrival_s\": %.9f}",
                  entry.arrival);
    out << line.substr(0, line.size() - 1) << arrival << "\n";
  }
  if (!out)
    return Status(StatusCode::Internal, "cannot write " + tracePath);
  return Status::ok();
}

/// The shell command that runs the peer's script on `tracePath` into
/// `resultsPath`, with its thread pools' and OpenBLAS's environment.
std::string peerCommand(const PeerOptions &options,
                        const std::string &tracePath,
                        const std::string &resultsPath) {
  std::string command =
      shellQuoted(options.python) + " " + shellQuoted(options.script) +
      " --weights " + shellQuoted(options.weights) + " --trace " +
      shellQuoted(tracePath) + " --out " + shellQuoted(resultsPath) +
      " --mode " + options.mode + " --threads " +
      std::to_string(options.threads) + " --bucket-width " +
      std::to_string(options.bucketWidth) + " --max-batch " +
      std::to_string(options.maxBatch) + " --device " + options.device;
  if (!options.reference.empty())
    command += " --reference " + shellQuoted(options.reference);
  command += options.extra;
  // The BLAS and OpenMP pools get the same threads as torch.
  std::string threads = std::to_string(options.threads);
  command = "OMP_NUM_THREADS=" + threads + " OPENBLAS_NUM_THREADS=" + threads +
            " MKL_NUM_THREADS=" + threads + " " + command;
  // Debian's OpenBLAS (0.3.21) does not recognise recent Intel processors
  // and falls back to its Prescott (SSE3) kernels, 4-5x slower than its
  // AVX-512 ones: the peer gets the kernels the processor can run, as a
  // careful user would ask for, unless OPENBLAS_CORETYPE is set already.
  if (!std::getenv("OPENBLAS_CORETYPE")) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f"))
      command = "OPENBLAS_CORETYPE=SkylakeX " + command;
    else if (__builtin_cpu_supports("avx2"))
      command = "OPENBLAS_CORETYPE=Haswell " + command;
#endif
  }
  return command;
}

/// Runs `command`, setting `summary` to the last line it prints; fails
/// unless it exits with status 0.
Status runPeerCommand(const std::string &command, std::string &summary) {
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return Status(StatusCode::Internal, "cannot run " + command);
  std::string output;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), pipe))
    output += buffer;
  int status = pclose(pipe);
  while (!output.empty() && output.back() == '\n')
    output.pop_back();
  // The summary is the last line the peer prints.
  summary = output.substr(
      output.rfind('\n') == std::string::npos ? 0 : output.rfind('\n') + 1);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Status(
        StatusCode::Internal,
        "the peer failed (" +
            (status != -1 && WIFEXITED(status)
                 ? "exit status " + std::to_string(WEXITSTATUS(status))
                 : std::string("killed or not run")) +
            "): " + command + (output.empty() ? "" : "\n" + output));
  return Status::ok();
}

/// The run's record from the peer's results at `resultsPath`: one line a
/// request of `trace`, each with its id, start and end times and batch.
Result<RunRecord> readPeerResults(const PeerOptions &options,
                                  const std::vector<TraceEntry> &trace,
                                  const std::string &resultsPath) {
  std::unordered_map<std::string, size_t> position;
  for (size_t k = 0; k < trace.size(); ++k)
    position["r" + std::to_string(trace[k].request)] = k;
  RunRecord record;
  record.timings.resize(trace.size());
  record.cellNames = {"requests"}; // the peer's batches, in requests
  std::vector<bool> seen(trace.size(), false);
  std::map<double, uint32_t> batches; // by start time: their sizes
  std::ifstream in(resultsPath);
  std::string line;
  size_t read = 0;
  double first = 1e300, last = 0;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    nlohmann::json result = nlohmann::json::parse(line, nullptr, false);
    auto number = [&](const char *key) {
      auto at = result.find(key);
      return at != result.end() && at->is_number() ? at->get<double>() : -1.0;
    };
    if (!result.is_object() || !result.contains("id") ||
        !result["id"].is_string())
      return Status(StatusCode::Internal,
                    resultsPath + ": not a peer result: " + line);
    auto found = position.find(result["id"].get<std::string>());
    if (found == position.end() || seen[found->second])
      return Status(StatusCode::Internal,
                    resultsPath + ": an unknown or repeated id: " + line);
    seen[found->second] = true;
    RequestTiming &timing = record.timings[found->second];
    // Arrivals are the trace's (the peer's offline mode says 0).
    timing.arrival =
        options.mode == "sorted" ? 0.0 : trace[found->second].arrival;
    timing.started = number("start_s");
    timing.finished = number("end_s");
    timing.ok = timing.finished >= 0 && timing.started >= 0;
    if (timing.ok && number("batch") > 0)
      batches[timing.started] = static_cast<uint32_t>(number("batch"));
    first = std::min(first, timing.arrival);
    last = std::max(last, timing.finished);
    ++read;
  }
  if (read != trace.size())
    return Status(StatusCode::Internal,
                  resultsPath + ": " + std::to_string(read) + " results for " +
                      std::to_string(trace.size()) + " requests");
  for (const auto &[started, size] : batches)
    record.tasks.push_back({started, 0, size, 0});
  record.seconds = last - first;
  return record;
}

} // namespace

Result<RunRecord> cellrun::loadgen::runPeer(
    const PeerOptions &options, const std::vector<std::string> &lines,
    const std::vector<TraceEntry> &trace, const std::string &directory,
    const std::string &label, std::string &summary) {
  std::string tracePath = directory + "/trace-" + label + ".jsonl";
  std::string resultsPath = directory + "/peer-" + label + ".jsonl";
  Status written = writePeerTrace(lines, trace, tracePath);
  if (!written.isOk())
    return written;
  std::string command = peerCommand(options, tracePath, resultsPath);
  Status ran = runPeerCommand(command, summary);
  if (!ran.isOk())
    return ran;
  return readPeerResults(options, trace, resultsPath);
}

Status cellrun::loadgen::writeReference(
    std::shared_ptr<const LoadedArtifact> artifact, EngineOptions options,
    const std::vector<Request> &requests, const std::string &path) {
  options.policy = Policy::Cellular;
  options.onTask = nullptr;
  auto engine = Engine::create(artifact, options);
  if (!engine.ok())
    return engine.status();
  std::ofstream out(path);
  for (const Request &request : requests) {
    RequestResult result = engine.value()->submit(request).get();
    if (!result.status.isOk())
      return result.status;
    nlohmann::json outputs = nlohmann::json::object();
    for (const OutputTensor &tensor : result.outputs) {
      nlohmann::json data = nlohmann::json::array();
      for (float value : tensor.floats)
        data.push_back(value);
      for (int64_t value : tensor.integers)
        data.push_back(value);
      outputs[tensor.name] = {{"shape", tensor.shape}, {"data", data}};
    }
    out << nlohmann::json{{"id", result.id}, {"outputs", outputs}}.dump()
        << "\n";
  }
  if (!out)
    return Status(StatusCode::Internal, "cannot write " + path);
  return Status::ok();
}
