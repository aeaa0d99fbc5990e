//===- ModelStructure.h - The unfolding spec as indices --*- C++ -*-===//
//
// The artifact's unfolding section names cells and tensors; the request
// processor works with indices. analyzeModel resolves and checks it once:
// which cells play which part, which inputs a request supplies (role
// input), which output updates which state input, where a child input comes
// from, which outputs are emitted per step, and the largest index each
// integer input may take (the row count of the embedding table it gathers
// from, found in the cell's kernels), so bad tokens are refused before they
// reach a task.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_MODELSTRUCTURE_H
#define CELLRUN_SCHED_MODELSTRUCTURE_H

#include "artifact/Artifact.h"
#include "cellrun/Unfolder.h"

#include <vector>

namespace cellrun {

struct CellRoles {
  const cellpack::CellType *cell = nullptr;
  uint32_t index = 0; // in LoadedArtifact::cells()
  /// Cell inputs with role input, in order (a request's NodeData).
  std::vector<uint32_t> dataInputs;
  /// Per data input: the exclusive upper bound of its values when it
  /// indexes a table (0 when unbounded), and its row bytes.
  std::vector<int64_t> dataLimits;
  std::vector<size_t> dataRowBytes;
  std::vector<cellpack::DType> dataTypes;
  /// Per data input: what a request gives for it (name, shape, type): the
  /// cell's input, or the input of the cell that projects it.
  std::vector<const cellpack::TensorSpec *> dataSpecs;
  /// Per data input: the cell that computes its rows from the request's
  /// rows at admission (TensorSpec::projected_by; chains only), or null;
  /// then dataRowBytes and dataTypes are the request's rows, not the
  /// pool's.
  std::vector<const cellpack::CellType *> dataProjections;
  /// Per cell input: the output of the same cell that updates it (state
  /// inputs), else -1.
  std::vector<int32_t> updatedBy;
  /// Per cell input: the child it comes from (-1 when not a child input)
  /// and that child's output index.
  std::vector<int32_t> childIndex;
  std::vector<int32_t> childOutput;
  /// Outputs returned at every step (emit flag, or role output).
  std::vector<uint32_t> emitted;
  /// Outputs with role state (their last value is returned).
  std::vector<uint32_t> stateOutputs;

  // Derived once (finishRoles), so that the per-step path reads no
  // FlatBuffers tables and builds no strings.
  uint32_t inputCount = 0, outputCount = 0;
  /// Per output: its name, "final_" + its name (a chain's last state), its
  /// element type and row bytes.
  std::vector<std::string> outputNames, finalNames;
  std::vector<cellpack::DType> outputTypes;
  std::vector<size_t> outputRowBytes;
  /// The emitted outputs, then the state outputs not emitted: what the host
  /// reads after a chain's last step.
  std::vector<uint32_t> emittedAndStates;
  /// Every output, in order.
  std::vector<uint32_t> allOutputs;
};

/// The longest decode an artifact may ask for (cellc's bound).
constexpr int64_t kMaxDecodeLength = 65536;

struct ModelStructure {
  cellpack::Structure kind = cellpack::Structure::Chain;
  /// chain: [cell]; seq2seq: [encoder, decoder]; tree: [leaf, internal].
  std::vector<CellRoles> cells;
  // seq2seq
  uint32_t decoderTokenInput = 0;
  uint32_t decoderTokenOutput = 0;
  /// The token output has the token input's row type, so a decoder step
  /// can read the token of the step before it on the device.
  bool tokenFeedbackOnDevice = false;
  int64_t bosToken = 0, eosToken = 0, maxDecodeLength = 0;
  /// The most tokens a request's decode may produce: max_decode_length, or
  /// the parser's step limit (RequestLimits::maxSteps) when that is lower.
  int64_t decodeLimit = 0;
  /// Per decoder input: the encoder output that initialises it, or -1.
  std::vector<int32_t> initialFromEncoder;
  /// Decoder inputs of role memory: one row a request, `positions` rows of
  /// the encoder output `encoderOutput` laid end to end (a source step
  /// each, zeros past the source), held from the first encoder step to the
  /// request's end.
  struct Memory {
    uint32_t input = 0;
    uint32_t encoderOutput = 0;
    size_t positionBytes = 0;
  };
  std::vector<Memory> memories;
  /// The longest source the memories hold (0 without memories).
  uint32_t memoryPositions = 0;
  /// The decoder input of role memory_mask (1.0 where a source step is,
  /// 0.0 past it), or -1.
  int32_t memoryMaskInput = -1;
  /// The decoder's token output alone: what the host reads after its
  /// steps (the encoder's outputs fill the memories on the device).
  std::vector<uint32_t> tokenOutputs;
  // tree
  int32_t arity = 0;
  // custom: every cell is a part, in the artifact's order
  std::string unfolder;
  UnfolderFactory makeUnfolder; // set by RequestParser::create
};

/// Resolves the unfolding of `artifact` (for custom structures: every cell
/// and the unfolder's name).
Result<ModelStructure> analyzeModel(const LoadedArtifact &artifact);

/// Bytes of one row of `spec`.
size_t tensorRowBytes(const cellpack::TensorSpec &spec);

} // namespace cellrun

#endif // CELLRUN_SCHED_MODELSTRUCTURE_H
