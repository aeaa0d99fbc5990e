//===- OnnxImporter.cpp - ONNX graph to a `cell.cell` function -----------===//
//
// Checks the model as a whole (opset, batch-leading inputs and outputs), then
// converts its nodes in order: shape arithmetic on the host (ShapeFolding),
// values whose batch is off axis 0 (BatchLayout), then the converters of
// ComputeConverters.cpp, ShapeConverters.cpp and RecurrentConverters.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/OnnxImporter.h"
#include "compiler/import/GraphImporter.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace cellc;
namespace om = cellc::onnx_model;

void cellc::loadImporterDialects(MLIRContext &context) {
  context.loadDialect<mlir::cell::CellDialect>();
}

/// The MLIR type of a graph input or output: batch-leading, otherwise static.
static FailureOr<RankedTensorType>
valueType(GraphImporter &importer, const om::ValueInfo &info, StringRef what) {
  Location loc = importer.fileLoc();
  Type element = importer.elementType(info.elemType);
  if (!element)
    return emitError(loc) << what << " '" << info.name << "' has element type "
                          << om::dataTypeName(info.elemType)
                          << ", which cellc does not support";
  if (element.isF64())
    return emitError(loc) << what << " '" << info.name
                          << "' is double (f64); cellc serves float32 cells "
                             "(the GEMMs and the CPU backend compute in "
                             "fp32): export the model in float32 "
                             "(module.float())";
  if (!info.hasShape || info.dims.empty())
    return emitError(loc) << what << " '" << info.name
                          << "' needs a shape whose leading dimension is the "
                             "batch (export with a dynamic batch axis)";
  SmallVector<int64_t> shape;
  for (auto [index, dim] : llvm::enumerate(info.dims)) {
    bool known = dim.kind == om::Dim::Kind::Known;
    if (index == 0 && known)
      return emitError(loc)
             << what << " '" << info.name << "' has static leading dimension "
             << dim.value
             << "; the leading dimension must be the dynamic batch (export "
                "with dynamic_axes={'"
             << info.name << "': {0: 'batch'}})";
    if (index > 0 && !known)
      return emitError(loc)
             << what << " '" << info.name << "' dimension " << index
             << " is dynamic; only the leading (batch) "
                "dimension may be";
    shape.push_back(known ? dim.value : ShapedType::kDynamic);
  }
  return RankedTensorType::get(shape, element);
}

static LogicalResult checkOpset(const om::Model &model, Location loc) {
  if (model.opsetVersion == 0)
    return emitError(loc) << "the model imports no opset of the default ONNX "
                             "domain";
  if (model.opsetVersion < kMinOpset || model.opsetVersion > kMaxOpset)
    return emitError(loc) << "opset " << model.opsetVersion
                          << " is outside the supported range " << kMinOpset
                          << ".." << kMaxOpset;
  return success();
}

static LogicalResult convertNode(GraphImporter &importer,
                                 const om::Node &node) {
  NodeContext ctx(importer, node);
  if (!node.domain.empty() && node.domain != "ai.onnx")
    return ctx.emitError() << "domain '" << node.domain
                           << "' is not supported (only the default ONNX "
                              "domain is)";
  FailureOr<bool> folded = foldOnHost(ctx);
  if (failed(folded))
    return failure();
  if (*folded)
    return success();
  FailureOr<bool> followed = followBatchLayout(ctx);
  if (failed(followed))
    return failure();
  if (*followed)
    return success();
  NodeConverter converter = findConverter(node.opType);
  if (!converter)
    return ctx.emitError() << "unsupported op type '" << node.opType
                           << "'; cellc supports " << supportedOpTypes();
  return converter(ctx);
}

/// Checks a computed output type against the batch rule and what the ONNX
/// file declares for that output. A dimension after the batch that the file
/// leaves unknown (the exporter could not infer it through shape arithmetic)
/// takes the computed size.
static LogicalResult checkOutput(GraphImporter &importer,
                                 const om::ValueInfo &info, Type computed) {
  om::ValueInfo resolved = info;
  auto computedType = computed.dyn_cast<RankedTensorType>();
  if (computedType &&
      computedType.getRank() == static_cast<int64_t>(resolved.dims.size()))
    for (auto [index, dim] : llvm::enumerate(resolved.dims))
      if (index > 0 && dim.kind != om::Dim::Kind::Known &&
          !computedType.isDynamicDim(index))
        dim = {om::Dim::Kind::Known, computedType.getDimSize(index), ""};
  FailureOr<RankedTensorType> declared =
      valueType(importer, resolved, "output");
  if (failed(declared))
    return failure();
  if (computed != *declared)
    return emitError(importer.fileLoc())
           << "output '" << info.name << "' is declared as " << *declared
           << " but the graph computes " << computed;
  return success();
}

/// The cell's argument types: one per graph input, checked by valueType.
static FailureOr<SmallVector<Type>> inputTypes(GraphImporter &importer,
                                               const om::Model &model) {
  SmallVector<Type> argTypes;
  for (const om::ValueInfo &input : model.inputs) {
    FailureOr<RankedTensorType> type = valueType(importer, input, "input");
    if (failed(type))
      return failure();
    argTypes.push_back(*type);
  }
  return argTypes;
}

/// The values of the graph outputs once every node is converted; each must
/// be computed, batch-leading and of the declared type.
static FailureOr<SmallVector<Value>> outputValues(GraphImporter &importer,
                                                  const om::Model &model) {
  SmallVector<Value> results;
  for (const om::ValueInfo &output : model.outputs) {
    Value value = importer.lookup(output.name, importer.fileLoc());
    if (!value)
      return emitError(importer.fileLoc())
             << "output '" << output.name << "' is computed by no node";
    if (const BatchLayout *layout = importer.batchLayout(output.name))
      return emitError(importer.fileLoc())
             << "output '" << output.name
             << "' has its batch dimension at axis " << layout->batchAxis
             << "; outputs must be batch-leading (transpose it first)";
    if (failed(checkOutput(importer, output, value.getType())))
      return failure();
    results.push_back(value);
  }
  return results;
}

/// Names every argument and result of `cell` after the graph's inputs and
/// outputs, with the roles input and output.
static void setDefaultRoles(mlir::cell::CellOp cell, const om::Model &model,
                            OpBuilder &builder) {
  auto roleAttr = [&](mlir::cell::Role role) {
    return builder.getNamedAttr(
        mlir::cell::CellDialect::kRoleAttr,
        mlir::cell::RoleAttr::get(builder.getContext(), role));
  };
  auto nameAttr = [&](StringRef name) {
    return builder.getNamedAttr(mlir::cell::CellDialect::kNameAttr,
                                builder.getStringAttr(name));
  };
  for (auto [index, input] : llvm::enumerate(model.inputs))
    cell.setArgAttrs(
        index, builder.getDictionaryAttr(
                   {nameAttr(input.name), roleAttr(mlir::cell::Role::Input)}));
  for (auto [index, output] : llvm::enumerate(model.outputs))
    cell.setResultAttrs(
        index, builder.getDictionaryAttr({nameAttr(output.name),
                                          roleAttr(mlir::cell::Role::Output)}));
}

FailureOr<mlir::cell::CellOp> cellc::importOnnxCell(const om::Model &model,
                                                    StringRef cellName,
                                                    ModuleOp module) {
  MLIRContext *context = module.getContext();
  loadImporterDialects(*context);
  OpBuilder builder(context);
  GraphImporter importer(model, builder);
  if (failed(checkOpset(model, importer.fileLoc())))
    return failure();
  if (model.outputs.empty())
    return emitError(importer.fileLoc()) << "the graph has no outputs";
  FailureOr<SmallVector<Type>> argTypes = inputTypes(importer, model);
  if (failed(argTypes))
    return failure();

  builder.setInsertionPointToEnd(module.getBody());
  auto cell = builder.create<mlir::cell::CellOp>(
      importer.fileLoc(), cellName, builder.getFunctionType(*argTypes, {}),
      /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
  Block *entry = new Block();
  cell.getBody().push_back(entry);
  auto discard = [&]() {
    cell.erase();
    return failure();
  };
  for (auto [input, type] : llvm::zip(model.inputs, *argTypes))
    importer.define(input.name, entry->addArgument(type, importer.fileLoc()));

  builder.setInsertionPointToEnd(entry);
  for (const om::Node &node : model.nodes)
    if (failed(convertNode(importer, node)))
      return discard();
  FailureOr<SmallVector<Value>> results = outputValues(importer, model);
  if (failed(results))
    return discard();
  builder.create<mlir::cell::ReturnOp>(importer.fileLoc(), *results);
  cell.setFunctionType(
      builder.getFunctionType(*argTypes, ValueRange(*results).getTypes()));
  setDefaultRoles(cell, model, builder);
  if (failed(mlir::verify(cell)))
    return discard();
  return cell;
}
