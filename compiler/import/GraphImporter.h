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
  /// The value of input `index`, or an error if it is missing or undefined.
  mlir::FailureOr<mlir::Value> input(size_t index);
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
  /// InferTypeOpInterface and taking `resultTypes` otherwise, then verifies
  /// it. Type or verifier errors become node errors and the op is removed.
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
  std::deque<HostInts> constantInts_; // small integer constants, as HostInts
};

/// Evaluates `ctx`'s node on the host when it is shape arithmetic: Shape of
/// any value, and Gather, Add, Sub, Mul, Div, Concat, Unsqueeze, Squeeze,
/// Slice, Cast, Identity over host integers. Returns true when it did (the
/// outputs are then host integers, and constants when fully known).
mlir::FailureOr<bool> foldOnHost(NodeContext &ctx);

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
  }
  mlir::OperationState state(loc_, OpT::getOperationName());
  OpT::build(builder(), state, types, operands, attributes);
  return verifyCreated(builder().create(state));
}

} // namespace cellc

#endif // CELL_IMPORT_GRAPHIMPORTER_H
