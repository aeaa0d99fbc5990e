//===- CellBase.td - The `cell` dialect and its attributes -*- tablegen -*-===//
//
// The dialect that cellc imports ONNX RNN cells into: tensor ops with ONNX
// semantics plus the cell-level concepts (a cell function whose arguments and
// results carry their role in the recurrence).
//
//===----------------------------------------------------------------------===//
#ifndef CELL_BASE_TD
#define CELL_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Cell_Dialect : Dialect {
  let name = "cell";
  let cppNamespace = "::mlir::cell";
  let summary = "RNN cells imported from ONNX, for cellular batching";
  let description = [{
    Tensors are builtin ranked tensors whose leading dimension is the batch
    (dynamic, `?`); every other dimension is static. Ops follow the ONNX
    operator of the same name with the attributes resolved at import time
    (negative axes normalised, constant inputs turned into attributes).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let useFoldAPI = kEmitFoldAdaptorFolder;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Names of the argument/result attributes of `cell.cell`.
    static constexpr ::llvm::StringLiteral kRoleAttr = "cell.role";
    static constexpr ::llvm::StringLiteral kNameAttr = "cell.name";
    static constexpr ::llvm::StringLiteral kUpdatesAttr = "cell.updates";
    static constexpr ::llvm::StringLiteral kChildAttr = "cell.child";
    static constexpr ::llvm::StringLiteral kFromAttr = "cell.from";
    static constexpr ::llvm::StringLiteral kEmitAttr = "cell.emit";
    /// On an input argument: the cell that computes it from what requests
    /// give, once per request step at admission (cell-hoist-input-projections).
    static constexpr ::llvm::StringLiteral kProjectedByAttr = "cell.projected_by";
    /// Attributes of a batch-specialized cell.
    static constexpr ::llvm::StringLiteral kBatchSizeAttr = "cell.batch_size";
    static constexpr ::llvm::StringLiteral kGenericAttr = "cell.generic";
  }];
}

def Cell_Role : I32EnumAttr<"Role",
    "role of a cell argument or result in the recurrence", [
  I32EnumAttrCase<"Input", 0, "input">,
  I32EnumAttrCase<"State", 1, "state">,
  I32EnumAttrCase<"Child", 2, "child">,
  I32EnumAttrCase<"Output", 3, "output">,
  I32EnumAttrCase<"Memory", 4, "memory">,
  I32EnumAttrCase<"MemoryMask", 5, "memory_mask">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::cell";
}

def Cell_RoleAttr : EnumAttr<Cell_Dialect, Cell_Role, "role"> {
  let assemblyFormat = "`<` $value `>`";
}

def Cell_Access : I32EnumAttr<"Access",
    "how a fused kernel reads an operand or writes a result", [
  I32EnumAttrCase<"Gather", 0, "gather">,
  I32EnumAttrCase<"Scatter", 1, "scatter">,
  I32EnumAttrCase<"Dense", 2, "dense">,
  I32EnumAttrCase<"Broadcast", 3, "broadcast">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::cell";
}

def Cell_AccessAttr : EnumAttr<Cell_Dialect, Cell_Access, "access"> {
  let assemblyFormat = "`<` $value `>`";
}

class Cell_Op<string mnemonic, list<Trait> traits = []>
    : Op<Cell_Dialect, mnemonic, traits>;

#endif // CELL_BASE_TD
