//===- GraphImporter.h - State of one ONNX graph import --------*- C++ -*-===//
//
// The value table, constant table and diagnostics shared by the node
// converters. One GraphImporter imports one graph into one `cell.cell`.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_IMPORT_GRAPHIMPORTER_H
#define CELL_IMPORT_GRAPHIMPORTER_H

#include "cell/IR/CellOps.h"
#include "compiler/import/OnnxModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <deque>
#include <optional>

namespace cellc {

class GraphImporter;

/// An integer tensor the importer evaluates itself (shape arithmetic, see
/// ShapeFolding.cpp): each element is known, or is the batch size, or
/// depends on the batch size some other way.
struct HostInts {
  enum class Kind : uint8_t { Known, Batch, Unknown };
  int32_t dataType = 0; // onnx_model::DataType::Int64 or Int32
  llvm::SmallVector<int64_t> dims;
  llvm::SmallVector<int64_t> values; // meaningful where kinds[i] == Known
  llvm::SmallVector<Kind> kinds;
  std::string batchNode; // the Shape node that read the batch size
  bool fullyKnown() const {
    return llvm::all_of(kinds, [](Kind kind) { return kind == Kind::Known; });
  }
};

/// An ONNX value whose batch dimension is not its leading one: the
/// [sequence, batch, width] and [directions, batch, hidden] tensors of the
/// LSTM, GRU and RNN ops, and what Transpose, Squeeze, Unsqueeze, Reshape,
/// Slice, Gather and Concat make of them. The importer keeps such a value as
/// rows: a [batch, columns] tensor whose columns run over the other dimensions
/// in their ONNX order (BatchLayout.cpp).
struct BatchLayout {
  llvm::SmallVector<int64_t> shape; // ONNX shape, kDynamic at batchAxis
  int64_t batchAxis = 0;
};

/// An ONNX shape for messages: "[2, batch, 32]".
std::string describeShape(llvm::ArrayRef<int64_t> shape);

/// A value as rows ([batch, columns]) with the ONNX shape it stands for.
struct Rows {
  mlir::Value value;
  BatchLayout layout;
};

/// What a converter sees of the node it converts: typed access to inputs,
/// constant inputs and attributes, op creation with checked result types, and
/// errors prefixed with the node's name, op type and opset.
class NodeContext {
public:
  NodeContext(GraphImporter &importer, const onnx_model::Node &node);

  const onnx_model::Node &node() const { return node_; }
  GraphImporter &importer() { return importer_; }
  int64_t opset() const;
  mlir::Location loc() const { return loc_; }
  mlir::OpBuilder &builder();
  mlir::MLIRContext *context();

  /// Error at the node: "node 'N' (Op, opset K): <message>".
  mlir::InFlightDiagnostic emitError();

  size_t numInputs() const { return node_.inputs.size(); }
  /// True when input `index` is present (not omitted, not "").
  bool hasInput(size_t index) const;
  /// The value of input `index`, or an error if it is missing or undefined
  /// or its batch dimension is not the leading one.
  mlir::FailureOr<mlir::Value> input(size_t index);
  /// Input `index` as rows, whichever axis its batch dimension is on; an
  /// error when it has no batch dimension.
  mlir::FailureOr<Rows> rows(size_t index);
  /// True when input `index` is kept as rows with its batch off axis 0.
  bool hasBatchLayout(size_t index) const;
  /// The value of input `index` as a ranked tensor type, or an error.
  mlir::FailureOr<mlir::RankedTensorType> inputType(size_t index);
  /// Integer contents of a constant input (initializer or Constant node).
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantInts(size_t index, llvm::StringRef what);
  /// Input `index` as a host-evaluated integer tensor: shape arithmetic or
  /// a small integer constant; null when it is neither.
  const HostInts *hostInts(size_t index);

  const onnx_model::Attribute *attribute(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t fallback) const;
  float floatAttr(llvm::StringRef name, float fallback) const;
  std::optional<llvm::SmallVector<int64_t>>
  intsAttr(llvm::StringRef name) const;

  /// Turns a possibly negative axis into [0, rank), or reports it.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                         llvm::StringRef what);

  /// Creates `OpT`, inferring its result types when it implements
  /// InferTypeOpInterface and taking `resultTypes` otherwise (by default the
  /// first operand's type), then verifies it. Type or verifier errors
  /// become node errors and the op is removed.
  template <typename OpT>
  mlir::FailureOr<mlir::Operation *>
  create(mlir::ValueRange operands,
         llvm::ArrayRef<mlir::NamedAttribute> attributes = {},
         llvm::ArrayRef<mlir::Type> resultTypes = {});

  /// MLIR element type of an ONNX data type, or null when unsupported.
  mlir::Type elementTypeOf(int32_t dataType);
  /// Keeps the tensor of a Constant node and records it as the constant value
  /// of the node's first output.
  const onnx_model::Tensor *keepConstantTensor(onnx_model::Tensor tensor);
  /// The attribute for `tensor` (inline or resource blob).
  mlir::FailureOr<mlir::ElementsAttr>
  tensorAttr(const onnx_model::Tensor &tensor);

  /// Binds the node's outputs, in order, to `values`.
  mlir::LogicalResult setOutputs(mlir::ValueRange values);
  /// Binds output `index` to `rows` standing for `layout`: a batch-leading
  /// layout becomes an ordinary value of its shape.
  mlir::LogicalResult setOutputRows(size_t index, mlir::Value rows,
                                    const BatchLayout &layout);
  /// `value` reshaped to `type` (no op when it already has that type).
  mlir::FailureOr<mlir::Value> reshape(mlir::Value value,
                                       mlir::RankedTensorType type);

private:
  mlir::LogicalResult
  inferTypes(llvm::function_ref<mlir::LogicalResult(mlir::Location)> infer);
  mlir::FailureOr<mlir::Operation *> verifyCreated(mlir::Operation *op);

  GraphImporter &importer_;
  const onnx_model::Node &node_;
  mlir::Location loc_;
};

using NodeConverter = mlir::LogicalResult (*)(NodeContext &);

/// The converter for ONNX `opType`, or null when the op is not supported.
NodeConverter findConverter(llvm::StringRef opType);
/// Op types with a converter, for messages.
std::string supportedOpTypes();

// Helpers shared by the shape converters (ShapeConverters.cpp).
/// Normalises every axis in `axes` against `rank`.
mlir::LogicalResult normalizeAxes(NodeContext &ctx,
                                  llvm::SmallVectorImpl<int64_t> &axes,
                                  int64_t rank);
/// The ints of attribute `name` (before `inputSince`) or of constant input
/// `index` (from `inputSince`); nullopt when the node gives neither.
mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
intsFromAttrOrInput(NodeContext &ctx, llvm::StringRef name, size_t index,
                    int64_t inputSince);
/// A Slice node's bounds against `shape`: axes normalised, starts and ends
/// clamped; an error for non-positive steps or a sliced batch dimension.
struct SliceBounds {
  llvm::SmallVector<int64_t> axes, starts, ends, steps;
};
mlir::FailureOr<SliceBounds> sliceBounds(NodeContext &ctx,
                                         llvm::ArrayRef<int64_t> shape);
/// The result type of a Reshape node applied to `input` (its target shape
/// resolved: 0 copies, -1 infers, the batch size read by Shape is the batch).
mlir::FailureOr<mlir::RankedTensorType>
reshapeResult(NodeContext &ctx, mlir::RankedTensorType input);

// Converters of shape ops (ShapeConverters.cpp).
mlir::LogicalResult convertConcat(NodeContext &ctx);
mlir::LogicalResult convertSplit(NodeContext &ctx);
mlir::LogicalResult convertSlice(NodeContext &ctx);
mlir::LogicalResult convertGather(NodeContext &ctx);
mlir::LogicalResult convertArgMax(NodeContext &ctx);
mlir::LogicalResult convertSqueeze(NodeContext &ctx);
mlir::LogicalResult convertUnsqueeze(NodeContext &ctx);
mlir::LogicalResult convertReshape(NodeContext &ctx);
mlir::LogicalResult convertTranspose(NodeContext &ctx);

class GraphImporter {
public:
  GraphImporter(const onnx_model::Model &model, mlir::OpBuilder &builder);

  const onnx_model::Model &model() const { return model_; }
  mlir::OpBuilder &builder() { return builder_; }
  mlir::MLIRContext *context() { return builder_.getContext(); }
  /// Location of the model file, for graph-level errors.
  mlir::Location fileLoc() const { return fileLoc_; }
  mlir::Location nodeLoc(const onnx_model::Node &node);

  /// MLIR element type of an ONNX data type, or null when unsupported.
  mlir::Type elementType(int32_t dataType);

  /// The value named `name`: a graph input, a node output, or an initializer
  /// (materialized as a `cell.constant` on first use). Null when undefined.
  mlir::Value lookup(llvm::StringRef name, mlir::Location useLoc);
  void define(llvm::StringRef name, mlir::Value value);
  /// The tensor behind `name` when it is an initializer or a Constant output.
  const onnx_model::Tensor *constantTensor(llvm::StringRef name) const;
  /// Stores `tensor` (a Constant node's value) as the constant behind `name`.
  const onnx_model::Tensor *defineConstantTensor(llvm::StringRef name,
                                                 onnx_model::Tensor tensor);

  /// The layout of `name` when it is kept as rows with its batch dimension
  /// off axis 0; null otherwise.
  const BatchLayout *batchLayout(llvm::StringRef name) const;
  /// Defines `name` as `rows` ([batch, columns]) standing for `layout`.
  void defineRows(llvm::StringRef name, mlir::Value rows, BatchLayout layout);

  /// Host-evaluated integer tensors (shape arithmetic) by name.
  const HostInts *hostInts(llvm::StringRef name);
  void defineHostInts(llvm::StringRef name, HostInts value);

  /// Builds the attribute of `tensor`: inline dense data when small, a dense
  /// resource blob (never printed element by element) otherwise.
  mlir::FailureOr<mlir::ElementsAttr>
  tensorAttr(const onnx_model::Tensor &tensor, mlir::Location loc);

private:
  const onnx_model::Model &model_;
  mlir::OpBuilder &builder_;
  mlir::Location fileLoc_;
  llvm::StringMap<mlir::Value> values_;
  llvm::StringMap<const onnx_model::Tensor *> constants_;
  llvm::StringMap<const onnx_model::Tensor *> initializers_;
  std::deque<onnx_model::Tensor> constantNodeTensors_;
  llvm::StringMap<HostInts> hostInts_;
  llvm::StringMap<BatchLayout> batchLayouts_;
  std::deque<HostInts> constantInts_; // small integer constants, as HostInts
};

/// Evaluates `ctx`'s node on the host when it is shape arithmetic: Shape of
/// any value, and Gather, Add, Sub, Mul, Div, Concat, Unsqueeze, Squeeze,
/// Slice, Cast, Identity over host integers. Returns true when it did (the
/// outputs are then host integers, and constants when fully known).
mlir::FailureOr<bool> foldOnHost(NodeContext &ctx);

/// Converts `ctx`'s node when it moves the batch dimension off axis 0 or
/// reads a value whose batch dimension is off axis 0 (Transpose, Squeeze,
/// Unsqueeze, Slice, Concat; BatchLayout.cpp). Returns true when it did.
mlir::FailureOr<bool> followBatchLayout(NodeContext &ctx);
/// Columns [start, end) of `rows` ([batch, columns]); `rows` itself when
/// that is all of them.
mlir::FailureOr<mlir::Value> columnRange(NodeContext &ctx, mlir::Value rows,
                                         int64_t start, int64_t end);

/// MatMul: by a weight matrix, or of per-row matrices (BatchedMatMul.cpp).
mlir::LogicalResult convertMatMul(NodeContext &ctx);
/// The sum (or `mean`) of `input` ([batch, m, n]) over `axis` 1 or 2, as a
/// product by a constant vector; [batch, 1, n] or [batch, m, 1] when
/// `keepdims`.
mlir::FailureOr<mlir::Value> reduceRowMatrices(NodeContext &ctx,
                                               mlir::Value input, int64_t axis,
                                               bool mean, bool keepdims);

// Converters of the recurrent ops LSTM, GRU and RNN for one time step
// (RecurrentConverters.cpp).
mlir::LogicalResult convertLstm(NodeContext &ctx);
mlir::LogicalResult convertGru(NodeContext &ctx);
mlir::LogicalResult convertRnn(NodeContext &ctx);

// Row reductions, LayerNormalization, Softmax, LogSoftmax
// (NormalizationConverters.cpp).
mlir::LogicalResult convertReduceMean(NodeContext &ctx);
mlir::LogicalResult convertReduceSum(NodeContext &ctx);
mlir::LogicalResult convertReduceMax(NodeContext &ctx);
mlir::LogicalResult convertLayerNormalization(NodeContext &ctx);
mlir::LogicalResult convertInstanceNormalization(NodeContext &ctx);
mlir::LogicalResult convertSoftmax(NodeContext &ctx);
mlir::LogicalResult convertLogSoftmax(NodeContext &ctx);

template <typename OpT>
mlir::FailureOr<mlir::Operation *>
NodeContext::create(mlir::ValueRange operands,
                    llvm::ArrayRef<mlir::NamedAttribute> attributes,
                    llvm::ArrayRef<mlir::Type> resultTypes) {
  llvm::SmallVector<mlir::Type> types(resultTypes.begin(), resultTypes.end());
  if constexpr (OpT::template hasTrait<mlir::InferTypeOpInterface::Trait>()) {
    auto dictionary = mlir::DictionaryAttr::get(context(), attributes);
    if (mlir::failed(inferTypes([&](mlir::Location loc) {
          return OpT::inferReturnTypes(context(), loc, operands, dictionary, {},
                                       types);
        })))
      return mlir::failure();
  } else if (types.empty() && !operands.empty()) {
    // Elementwise ops without inference (Sigmoid, Tanh, ...) keep the
    // type of their operand.
    types.push_back(operands.front().getType());
  }
  mlir::OperationState state(loc_, OpT::getOperationName());
  OpT::build(builder(), state, types, operands, attributes);
  return verifyCreated(builder().create(state));
}

} // namespace cellc

#endif // CELL_IMPORT_GRAPHIMPORTER_H
