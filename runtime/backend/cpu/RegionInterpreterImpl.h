//===- RegionInterpreterImpl.h - Region interpreter internals ---*- C++ -*-===//
//
// Shared by RegionInterpreter.cpp, RegionDataOps.cpp and RegionMathOps.cpp
// (execution) and by RegionPreparation.cpp, RegionChecks.cpp and
// RegionOpChecks.cpp (checking a region and computing its index maps once).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_REGIONINTERPRETERIMPL_H
#define CELLRUN_BACKEND_CPU_REGIONINTERPRETERIMPL_H

#include "LstmGates.h"
#include "RegionInterpreter.h"

#include <string>
#include <vector>

namespace cellrun::cpu::detail {
struct Value {
  cellpack::DType dtype = cellpack::DType::F32;
  bool isFloat = true;
  bool hasBatch = false;
  std::vector<int64_t> shape; // a row's view: leading 1 for batch values
  int64_t count = 1;          // elements per row
  /// Storage: `count` elements per row of the block for batch values, one
  /// row for the others.
  std::vector<float> f;
  std::vector<int64_t> i;
  /// A weight read in place (fp32 or int64 broadcast inputs), not copied.
  const void *external = nullptr;
  /// A view (fp32 batch values only; Impl::chooseViews): row r of the block
  /// lies at rowPointers[r], where its producer found it (a pool row, a
  /// gathered table row, a part of another value's row), and nothing is
  /// copied into `f`. Only ops that read values row by row take a view.
  bool view = false;
  std::vector<const float *> rowPointers;

  const float *floats() const {
    return external ? static_cast<const float *>(external) : f.data();
  }
  const int64_t *ints() const {
    return external ? static_cast<const int64_t *>(external) : i.data();
  }
  /// Row r of the block (row 0 for values without the batch).
  const float *floatRow(int64_t r) const {
    if (view)
      return rowPointers[r];
    return floats() + (hasBatch ? r * count : 0);
  }
  const int64_t *intRow(int64_t r) const {
    return ints() + (hasBatch ? r * count : 0);
  }
};

/// Where each element of a result comes from: (operand number, index).
using MoveMap = std::vector<std::pair<uint32_t, int64_t>>;

/// A run of a move map: `length` elements from operand `operand` starting
/// at `from` go to the result starting at `to`.
struct MoveRun {
  uint32_t operand;
  int64_t from, to, length;
};

/// A binary op's broadcast maps as two nested loops, when they have that
/// form: result element o * inner + i reads operand n at
/// o * outerStride[n] + i * innerStride[n], inner strides 0 or 1 and not
/// both 0 (a number against a run, or two runs). inner == 0: no such form.
struct StridedBroadcast {
  int64_t inner = 0;
  int64_t outerStride[2] = {0, 0}, innerStride[2] = {0, 0};
};

/// The strided form of the maps of a two-operand op over `count` result
/// elements a row, given the result's row shape (RegionPreparation.cpp).
StridedBroadcast stridedBroadcast(const std::vector<std::vector<int64_t>> &maps,
                                  const std::vector<int64_t> &resultShape,
                                  int64_t count);

struct PreparedOp {
  const cellpack::PortableOp *op = nullptr;
  std::vector<uint32_t> operands, results;
  std::vector<std::vector<int64_t>> broadcast; // per operand, empty: same
  StridedBroadcast strided;   // Add, Sub, Mul, Div with broadcast maps
  std::vector<MoveMap> moves; // per result
  std::vector<std::vector<MoveRun>> runs; // per result, from moves
  /// Arithmetic over views: each operand's row pointers for the block.
  std::vector<const float *> rowsOfA, rowsOfB;
};

inline int64_t product(const std::vector<int64_t> &shape, size_t begin,
                       size_t end) {
  int64_t count = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    count *= shape[i];
  return count;
}

inline std::vector<int64_t>
toVector(const flatbuffers::Vector<int64_t> *values) {
  return values ? std::vector<int64_t>(values->begin(), values->end())
                : std::vector<int64_t>();
}

inline std::vector<int64_t> strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> result(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    result[i - 1] = result[i] * shape[i];
  return result;
}

/// For each element of `result`, the index into `operand` under numpy
/// broadcasting (empty when the shapes are equal).
inline std::vector<int64_t> broadcastMap(const std::vector<int64_t> &operand,
                                         const std::vector<int64_t> &result) {
  if (operand == result)
    return {};
  std::vector<int64_t> resultStrides = strides(result);
  std::vector<int64_t> operandStrides = strides(operand);
  size_t offset = result.size() - operand.size();
  int64_t count = product(result, 0, result.size());
  std::vector<int64_t> map(count);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t index = 0;
    for (size_t d = offset; d < result.size(); ++d) {
      int64_t coordinate = flat / resultStrides[d] % result[d];
      if (operand[d - offset] != 1)
        index += coordinate * operandStrides[d - offset];
    }
    map[flat] = index;
  }
  for (int64_t flat = 0; flat < count; ++flat)
    if (map[flat] != flat)
      return map;
  return {}; // the identity: same elements, other shape
}
} // namespace cellrun::cpu::detail

namespace cellrun::cpu {
using namespace detail;

struct RegionInterpreter::Impl {
  const cellpack::KernelStep &step;
  std::vector<Value> values;
  std::vector<PreparedOp> ops;
  std::vector<uint32_t> results;
  RegionOptions options;
  int64_t blockRows = 1; // rows per pass over the ops
  int64_t rowBytes = 0;  // bytes of batch values a row
  bool hasGemm = false;
  /// An LSTM's gates run as one op (RegionFusion.cpp, LstmGates.h): its
  /// pre-activations a (+ b), its cell state c and the two values it makes;
  /// per gate (input, forget, candidate, output) its place in a's row.
  struct FusedGates {
    uint32_t a = 0, b = UINT32_MAX, c = 0, cellOut = 0, hiddenOut = 0;
    int64_t hidden = 0;
    int64_t offsets[4] = {0, 0, 0, 0};
    std::vector<const float *> aRows, bRows, cRows; // the block's rows
    /// The region result (its number) that c' and h' are, when nothing
    /// else reads them and the result is fp32: they are then written
    /// straight to the task's output rows (cOutRows, hOutRows), not stored
    /// in the block for storeRows to copy; -1 otherwise.
    int32_t cellResult = -1, hiddenResult = -1;
    std::vector<float *> cOutRows, hOutRows;
    /// `a` made in the loop from a GEMM (RegionInterpreter::foldGemm): its
    /// weights, alpha, beta and bias; rows set per block.
    bool gemmFolded = false;
    GateGemm gemm;
  };
  std::vector<FusedGates> fusedGates;
  /// The task's rows of A of the GEMMs folded into fused gates.
  const float *const *gemmRows = nullptr;
  /// A GRU's gates run as one op (RegionFusionGru.cpp, GruGates.h): the
  /// projections a and b, the state h and h' (the result), and per
  /// projection the place of each part (reset, update, new) in its row.
  struct FusedGru {
    uint32_t a = 0, b = 0, h = 0, out = 0;
    int64_t hidden = 0;
    int64_t aOffsets[3] = {0, 0, 0}, bOffsets[3] = {0, 0, 0};
    bool hFirst = true; // the step subtracts n from h (else h from n)
    /// The region result h' is, when it goes straight to the task's rows
    /// (as FusedGates::hiddenResult); -1 otherwise.
    int32_t outResult = -1;
    std::vector<const float *> aRows, bRows, hRows;
    std::vector<float *> outRows;
  };
  std::vector<FusedGru> fusedGru;
  /// Per op (empty when nothing is fused): -1 run it, k >= 0 run
  /// fusedGates[k] in its place, k <= -3 fusedGru[-3 - k], -2 left out
  /// (part of a fused op).
  std::vector<int32_t> opFusion;
  /// Per result: written to the task's rows by a fused op in this block
  /// (storeRows leaves it).
  std::vector<uint8_t> storedAlready;
  /// Per result: written to its OutputView::copyTo by a fused op in this
  /// block (copyRows leaves it).
  std::vector<uint8_t> copiedAlready;
  Impl(const cellpack::KernelStep &step, RegionOptions options)
      : step(step), options(std::move(options)) {}

  Status prepare();
  /// RegionChecks.cpp: shapes, definitions and the step's operands.
  Status checkShape(uint32_t id, const flatbuffers::Vector<int64_t> *shape);
  Status checkValueSizes();
  Status checkDefinitions(uint32_t numInputs);
  Status checkBoundary(uint32_t numInputs);
  /// RegionOpChecks.cpp: an op's arity, axes and shapes.
  Status validate(const PreparedOp &prepared);
  Status prepareMoves(PreparedOp &prepared);
  /// Marks the values that can be views (Value::view): fp32 batch values
  /// made by a pool-row input, a Gather of whole table rows, a Split or
  /// Slice part that is one run of its operand's row, or a copy, when every
  /// op reading them reads row by row.
  void chooseViews();
  void allocate();
  /// A fused op's result goes straight into the task's pool rows (not into
  /// the block for storeRows to copy) in rows of at most this many floats.
  /// A wide row gains nothing (storeRows' copy of 4 KB may write whole lines
  /// without reading them first): hidden 1024 in task_bench was level to 2%
  /// slower straight, inside that VM's noise.
  static constexpr int64_t kStraightRowFloats = 256;
  /// The region result (its number) that value `id`, made by a fused op
  /// covering ops `covered`, goes straight to: `id` is one fp32 result,
  /// read by none but the covered ops (`readers`), in narrow rows; else -1.
  int32_t straightResult(uint32_t id, const std::vector<size_t> &readers,
                         const std::vector<size_t> &covered) const;
  /// For a fused op's result `result` (straightResult, or -1): the task's
  /// pool rows of the block's rows first..first+rows-1 in `rowsOut`, marked
  /// stored (storedAlready); null where it goes through the block.
  float *const *straightRows(int32_t result, std::vector<float *> &rowsOut,
                             const std::vector<OutputView> &outputs,
                             int64_t first, int64_t rows);
  /// For a result that goes straight to the task's rows (straightRows):
  /// the places its block rows are copied to too (OutputView::copyTo from
  /// `first`), marked copied (copiedAlready); null when there are none.
  float *const *straightCopies(int32_t result,
                               const std::vector<OutputView> &outputs,
                               int64_t first);
  /// Where the block's first `rows` rows of value `id` lie: a view's row
  /// pointers as they are, other values' rows listed in `listed`.
  const float *const *rowsOfBlock(uint32_t id,
                                  std::vector<const float *> &listed,
                                  int64_t rows) const {
    const Value &value = values[id];
    if (value.view)
      return value.rowPointers.data();
    for (int64_t r = 0; r < rows; ++r)
      listed[r] = value.floatRow(r);
    return listed.data();
  }
  /// After storeRows: the block's rows of every result with copy places
  /// that no fused op wrote there, copied from the task's pool rows (still
  /// in cache) to them.
  void copyRows(const std::vector<OutputView> &outputs, int64_t first,
                int64_t rows);
  /// Finds the LSTM and GRU gates it can run as one op (after allocate();
  /// CELLRUN_CPU_FUSED_GATES=off: none).
  void fuseGates();
  void fuseLstmGates();
  void fuseGruGates();
  void runFusedGru(FusedGru &fused, const std::vector<OutputView> &outputs,
                   int64_t first, int64_t rows);
  void runFusedGates(FusedGates &fused, const std::vector<OutputView> &outputs,
                     int64_t first, int64_t rows);
  Status execute(PreparedOp &prepared, int64_t rows);
  Status executeOp(PreparedOp &prepared, int64_t rows);
  Status executeArithmetic(PreparedOp &prepared, int64_t rows);
  Status executeActivation(PreparedOp &prepared, int64_t rows);
  Status executeGemm(PreparedOp &prepared, int64_t rows);
  /// Cast, copies, moves, Gather, ArgMax and Constant (RegionDataOps.cpp).
  Status executeCast(PreparedOp &prepared, int64_t rows);
  Status executeCopy(PreparedOp &prepared, int64_t rows);
  Status executeMoves(PreparedOp &prepared, int64_t rows);
  Status executeGather(PreparedOp &prepared, int64_t rows);
  Status executeArgMax(PreparedOp &prepared, int64_t rows);
  Status executeConstant(PreparedOp &prepared);
  /// Erf, Sqrt, Exp, Log, Softplus, Neg, Pow, the comparisons, Not, Where,
  /// ReduceMean, ReduceSum, ReduceMax and RowMatMul (RegionMathOps.cpp).
  Status executeUnaryMath(PreparedOp &prepared, int64_t rows);
  Status executePow(PreparedOp &prepared, int64_t rows);
  Status executeComparison(PreparedOp &prepared, int64_t rows);
  Status executeWhere(PreparedOp &prepared, int64_t rows);
  Status executeReduction(PreparedOp &prepared, int64_t rows);
  Status executeRowMatMul(PreparedOp &prepared, int64_t rows);
  void loadRows(const std::vector<InputView> &inputs, int64_t first,
                int64_t rows);
  void storeRows(const std::vector<OutputView> &outputs, int64_t first,
                 int64_t rows);
};

/// A region input without the batch that runs read in place (a weight of
/// fp32 or int64), not copied into the region's storage.
inline bool readInPlace(const Value &value) {
  return !value.hasBatch && (value.dtype == cellpack::DType::F32 ||
                             value.dtype == cellpack::DType::I64);
}

/// A malformed region, as a status.
inline Status invalidRegion(const std::string &message) {
  return Status(StatusCode::DataLoss, "kernel region: " + message);
}

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_REGIONINTERPRETERIMPL_H
