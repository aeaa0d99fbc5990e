//===- Request.h - Requests and their results ------------------*- C++ -*-===//
//
// What a client asks for and gets back, independent of the wire format.
// A request is the data of one cell graph as the artifact's unfolding spec
// describes it:
//  - chain: one step per element of `steps` (each step: the rows of the
//    cell's `input`-role tensors);
//  - seq2seq: `steps` are the encoder's steps; the decoder runs from the
//    BOS token until it returns EOS or `maxDecodeLength` tokens;
//  - tree: `tree` nodes, leaves with the leaf cell's input rows, internal
//    nodes with exactly `arity` children (indices into `tree`) and the
//    internal cell's input rows (if it takes any), one root;
//  - custom: the request's JSON, for the registered unfolder (Unfolder.h).
// Parsing (RequestParser.h) checks a request against the artifact, so the
// engine only ever sees well-formed requests.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_REQUEST_H
#define CELLRUN_REQUEST_H

#include "cellrun/Status.h"

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace cellrun {

/// The rows of a cell's input-role tensors for one node, in the order of the
/// cell's inputs (one entry per input-role tensor).
using NodeData = std::vector<std::vector<uint8_t>>;

/// The rows of a sequence's steps: per step, one row for each input-role
/// tensor of the cell, in input order. Every byte lives in one buffer, and
/// while every step has the rows of the first (the usual case) a row is
/// found by arithmetic: a request of any length costs one allocation, not
/// two a step (made by the parser's thread, freed by the engine's).
class StepRows {
public:
  size_t size() const { return steps_; }
  bool empty() const { return steps_ == 0; }
  void clear() { *this = StepRows(); }
  /// Room for `steps` steps of `bytesPerStep` bytes in `rowsPerStep` rows.
  void reserve(size_t steps, size_t rowsPerStep, size_t bytesPerStep);
  /// Appends a step: its rows in input order.
  void push_back(const NodeData &rows);
  /// Builds a step in place: appendRow adds a row of `size` bytes (zeroed)
  /// and returns it; endStep makes the rows added since the last step the
  /// next step.
  uint8_t *appendRow(size_t size);
  void endStep();

  /// The rows of step `step`, and row `row` of it.
  size_t rows(size_t step) const {
    return irregular_ ? stepStart_[step + 1] - stepStart_[step] : layoutRows_;
  }
  const uint8_t *row(size_t step, size_t row) const {
    return bytes_.data() + offset(step, row);
  }
  uint8_t *row(size_t step, size_t row) {
    return bytes_.data() + offset(step, row);
  }
  size_t rowSize(size_t step, size_t row) const {
    if (!irregular_)
      return layout_[row + 1] - layout_[row];
    size_t at = stepStart_[step] + row;
    return rowStart_[at + 1] - rowStart_[at];
  }
  /// Every step has the rows of the first (a row is found by arithmetic).
  bool uniform() const { return !irregular_; }
  /// Step `step` as a NodeData (a copy).
  NodeData step(size_t step) const;
  /// Steps [begin, end) on their own.
  StepRows slice(size_t begin, size_t end) const;
  /// The steps in the opposite order.
  void reverse();

private:
  size_t offset(size_t step, size_t row) const {
    return irregular_ ? rowStart_[stepStart_[step] + row]
                      : step * layout_[layoutRows_] + layout_[row];
  }
  /// Every row's offset from now on (a step unlike the first).
  void becomeIrregular();

  std::vector<uint8_t> bytes_;
  size_t steps_ = 0;
  /// The first step's rows (their offsets in the step, then its bytes),
  /// which every step has unless irregular_; up to kRows rows.
  static constexpr size_t kRows = 7;
  uint32_t layout_[kRows + 1] = {};
  uint32_t layoutRows_ = 0;
  bool layoutSet_ = false;
  uint32_t openRows_ = 0; // rows of the step being built
  bool irregular_ = false;
  std::vector<size_t> rowStart_;  // irregular: per row its offset, then end
  std::vector<size_t> stepStart_; // irregular: per step its first row, then
                                  // the end
};

struct TreeNode {
  NodeData data;                 // the inputs of the node's cell
  std::vector<int32_t> children; // internal nodes
};

/// A chunk of a streaming session (chain models): the state the chunk ends
/// with stays in the engine's pools and is where the next chunk of the same
/// session starts. Chunks of one session run in the order submitted.
struct SessionChunk {
  uint64_t id = 0;    // 0: not part of a session
  bool start = false; // opens the session (from zero state)
  bool end = false;   // closes it when this chunk is done
};

/// Lets whoever submitted a request end it early (Engine::cancel): the
/// submitter keeps one copy, the request another. Filled in by the engine.
class CancelToken {
public:
  /// Engine::cancel has been called for it.
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

private:
  friend class Engine;
  friend class EngineWorker;
  std::atomic<bool> cancelled_{false};
  // Under the engine's admission mutex: the worker that admitted the
  // request (-1 while it waits) and why it was cancelled.
  int32_t worker_ = -1;
  std::string why_;
  // The worker's own: the request's key in its table.
  uint64_t key_ = 0;
};

struct Request {
  std::string id;
  StepRows steps;             // chain, seq2seq encoder
  std::vector<TreeNode> tree; // tree
  int32_t root = -1;
  int64_t maxDecodeLength = 0; // seq2seq; 0: the artifact's limit
  std::shared_ptr<const nlohmann::json> json; // custom: the whole request
  double deadlineMicros = 0;                  // latency goal; 0: none
  SessionChunk session;
  /// Set to be able to cancel the request (Engine::cancel); may be null.
  std::shared_ptr<CancelToken> cancel;
  /// The outputs its result holds, by name (empty: all; a name the model
  /// lacks, or one given twice, is refused). A chain's outputs left out are
  /// never read back (no per-step copy of an emitted row the caller does not
  /// want); other structures drop them at the end.
  std::vector<std::string> outputs;
};

namespace detail {
/// Storage for request and result values, on a 64-byte line: from the
/// memory a backend installed to read and write them in place (the cuda
/// backend's page-locked results, ExecutorOptions::pinnedResults), else the
/// heap. Throws std::bad_alloc when neither has room.
void *allocateValues(size_t bytes);
void freeValues(void *values, size_t bytes) noexcept;
} // namespace detail

/// std::allocator whose value-initialization leaves elements as they are:
/// resizing a vector of it does not zero what the engine then overwrites
/// (a chain's per-step results are sized for every step at admission, and
/// each step's task writes its row; a failed request returns no outputs).
/// Storage starts on a 64-byte line, so rows of whole lines are written
/// line by line (the CPU backend's streaming stores).
template <typename T> struct UninitializedAllocator : std::allocator<T> {
  template <typename U> struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U> &) noexcept {}
  T *allocate(size_t count) {
    if (count > std::numeric_limits<size_t>::max() / sizeof(T))
      throw std::bad_array_new_length();
    return static_cast<T *>(detail::allocateValues(count * sizeof(T)));
  }
  void deallocate(T *values, size_t count) noexcept {
    detail::freeValues(values, count * sizeof(T));
  }
  template <typename U> void construct(U *place) noexcept { ::new (place) U; }
  template <typename U, typename... Args>
  void construct(U *place, Args &&...args) {
    ::new (place) U(std::forward<Args>(args)...);
  }
};
using FloatValues = std::vector<float, UninitializedAllocator<float>>;
using IntegerValues = std::vector<int64_t, UninitializedAllocator<int64_t>>;

/// One named output: float values or integer values, with its shape.
struct OutputTensor {
  std::string name;
  std::vector<int64_t> shape;
  FloatValues floats;
  IntegerValues integers;
};

struct RequestResult {
  std::string id;
  Status status;
  std::vector<OutputTensor> outputs;
  /// seq2seq: "eos" or "limit".
  std::string stopReason;
  /// Arrival to the start of its first cell, and from then to completion.
  double queueMicros = 0;
  double computeMicros = 0;
  bool missedDeadline = false;

  const OutputTensor *find(const std::string &name) const {
    for (const OutputTensor &tensor : outputs)
      if (tensor.name == name)
        return &tensor;
    return nullptr;
  }
};

} // namespace cellrun

#endif // CELLRUN_REQUEST_H
