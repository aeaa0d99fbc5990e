//===- CellOps.td - Operations of the `cell` dialect --------*- tablegen -*-===//
//
// One op per ONNX operator that PyTorch emits for RNN cells, plus the cell
// function (`cell.cell`) and its terminator. Result types are inferred from the
// operands and attributes (InferTypeOpInterface), which is also how the
// verifiers check shapes.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_OPS_TD
#define CELL_OPS_TD

include "cell/IR/CellBase.td"
include "mlir/IR/FunctionInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Cell function
//===----------------------------------------------------------------------===//

def Cell_CellOp : Cell_Op<"cell", [
    FunctionOpInterface, IsolatedFromAbove, Symbol,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "one step of a recurrence: a function over batch-leading tensors";
  let description = [{
    A cell takes a batch of rows (leading dynamic dimension) and returns a batch
    of rows. Every argument carries `cell.role` (`input`, `state` or `child`)
    and every result carries `cell.role` (`state` or `output`); `cell.name`
    keeps the ONNX name. A state result names the state argument it replaces
    with `cell.updates`; a child argument names its child index (`cell.child`)
    and the child cell's result it takes (`cell.from`).

    ```mlir
    cell.cell @rnn(%x: tensor<?x8xf32> {cell.name = "x", cell.role = #cell.role<input>},
                   %h: tensor<?x8xf32> {cell.name = "h", cell.role = #cell.role<state>})
        -> (tensor<?x8xf32> {cell.name = "h_next", cell.role = #cell.role<state>,
                             cell.updates = "h"}) {
      %0 = cell.add %x, %h : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
      %1 = cell.tanh %0 : tensor<?x8xf32>
      cell.return %1 : tensor<?x8xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    static ::llvm::StringRef getDefaultDialect() { return "cell"; }

    /// Role of argument/result `index`; Input/Output when none is attached.
    Role getArgumentRole(unsigned index);
    Role getResultRole(unsigned index);
    /// ONNX name of argument/result `index`, empty when none is attached.
    ::llvm::StringRef getArgumentName(unsigned index);
    ::llvm::StringRef getResultName(unsigned index);
  }];
}

def Cell_ReturnOp : Cell_Op<"return", [
    Pure, HasParent<"CellOp">, ReturnLike, Terminator]> {
  let summary = "returns the results of a cell";
  let arguments = (ins Variadic<AnyRankedTensor>:$operands);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def Cell_FusedOp : Cell_Op<"fused", [
    IsolatedFromAbove, SingleBlockImplicitTerminator<"YieldOp">,
    RecursiveMemoryEffects, OpAsmOpInterface]> {
  let summary = "a group of ops that becomes one kernel";
  let description = [{
    The body computes the results from the operands (its block arguments)
    with elementwise and row-local ops; code generation turns it into one
    kernel whose thread computes one element of each batch row. GEMMs stay
    outside and feed it (the fused op is their epilogue) or consume it (their
    prologue).

    `operand_access` says how the kernel reads each operand: `gather` reads a
    row of a state pool through the task's row-index vector (a cell
    argument), `dense` reads row r of a workspace buffer, `broadcast` reads a
    tensor without batch dimension (a weight). `result_access` says how it
    writes each result: `scatter` to the row-index destinations of a state
    pool (a cell result), `dense` to a workspace buffer. Nothing is copied to
    regroup a batch.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       ArrayAttr:$operand_access, ArrayAttr:$result_access);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let extraClassDeclaration = [{
    static ::llvm::StringRef getDefaultDialect() { return "cell"; }
  }];
  let builders = [OpBuilder<(ins "::mlir::TypeRange":$resultTypes,
      "::mlir::ValueRange":$inputs, "::mlir::ArrayAttr":$operandAccess,
      "::mlir::ArrayAttr":$resultAccess)>];
}

def Cell_YieldOp : Cell_Op<"yield", [
    Pure, HasParent<"FusedOp">, ReturnLike, Terminator]> {
  let summary = "the results of a cell.fused body";
  let arguments = (ins Variadic<AnyRankedTensor>:$operands);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
}

//===----------------------------------------------------------------------===//
// Constants and plumbing
//===----------------------------------------------------------------------===//

def Cell_ConstantOp : Cell_Op<"constant", [
    ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor (weights are dense resource blobs)";
  let description = [{
    Small constants are printed inline (`dense<...>`); weights imported from
    ONNX initializers are `dense_resource<...>` blobs so that they are never
    printed element by element.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Cell_IdentityOp : Cell_Op<"identity", [Pure, SameOperandsAndResultType]> {
  let summary = "ONNX Identity";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Cell_CastOp : Cell_Op<"cast", [Pure]> {
  let summary = "ONNX Cast: converts the element type, keeps the shape";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Cell_UnaryOp<string mnemonic, string onnxName>
    : Cell_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "ONNX " # onnxName # " (elementwise)";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Cell_SigmoidOp : Cell_UnaryOp<"sigmoid", "Sigmoid">;
def Cell_TanhOp : Cell_UnaryOp<"tanh", "Tanh">;
def Cell_ReluOp : Cell_UnaryOp<"relu", "Relu">;
def Cell_ErfOp : Cell_UnaryOp<"erf", "Erf">;
def Cell_SqrtOp : Cell_UnaryOp<"sqrt", "Sqrt">;
def Cell_ExpOp : Cell_UnaryOp<"exp", "Exp">;
def Cell_LogOp : Cell_UnaryOp<"log", "Log">;
// log(1 + exp(x)), computed as log1p(exp(x)) below 20 and x above (as
// PyTorch's softplus does by default).
def Cell_SoftplusOp : Cell_UnaryOp<"softplus", "Softplus">;
def Cell_NegOp : Cell_UnaryOp<"neg", "Neg">;

class Cell_BinaryOp<string mnemonic, string onnxName>
    : Cell_Op<mnemonic, [Pure,
        DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX " # onnxName # " (elementwise, numpy broadcasting)";
  let description = [{
    Both operands have the same element type. Shapes broadcast as in numpy,
    except that the dynamic batch dimension only broadcasts against 1.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Cell_AddOp : Cell_BinaryOp<"add", "Add">;
def Cell_SubOp : Cell_BinaryOp<"sub", "Sub">;
def Cell_MulOp : Cell_BinaryOp<"mul", "Mul">;
def Cell_DivOp : Cell_BinaryOp<"div", "Div">;

def Cell_PowOp : Cell_Op<"pow", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Pow (elementwise, numpy broadcasting)";
  let description = [{
    Base and exponent are floating point of the same element type (PyTorch
    exports `x ** 2` with a float exponent).
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Cell_EqualOp : Cell_Op<"equal", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Equal: i1 result of comparing two tensors elementwise";
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

class Cell_CompareOp<string mnemonic, string onnxName, string holds>
    : Cell_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX " # onnxName # ": i1 result of comparing two tensors elementwise";
  let description = [{
    1 where lhs }] # holds # [{ rhs (numpy broadcasting); the operands have one
    element type.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Cell_LessOp : Cell_CompareOp<"less", "Less", "<">;
def Cell_LessOrEqualOp : Cell_CompareOp<"less_or_equal", "LessOrEqual", "<=">;
def Cell_GreaterOp : Cell_CompareOp<"greater", "Greater", ">">;
def Cell_GreaterOrEqualOp
    : Cell_CompareOp<"greater_or_equal", "GreaterOrEqual", ">=">;

def Cell_NotOp : Cell_Op<"not", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Not: the logical negation of an i1 tensor";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Cell_WhereOp : Cell_Op<"where", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Where: lhs where the i1 condition holds, else rhs";
  let arguments = (ins AnyRankedTensor:$condition, AnyRankedTensor:$lhs,
                       AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

class Cell_ReduceOp<string mnemonic, string onnxName, string what>
    : Cell_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX " # onnxName # " over `axes` (never the batch)";
  let description = [{
    The }] # what # [{ of the elements along `axes`, kept as size-1 dimensions
    when `keepdims`. Code generation reduces the columns of a row (axes = [1]
    of a [batch, columns] value) in a kernel of its own, one block per row.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Cell_ReduceMeanOp : Cell_ReduceOp<"reduce_mean", "ReduceMean", "mean">;
def Cell_ReduceSumOp : Cell_ReduceOp<"reduce_sum", "ReduceSum", "sum">;
def Cell_ReduceMaxOp : Cell_ReduceOp<"reduce_max", "ReduceMax", "largest">;

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

def Cell_MatMulOp : Cell_Op<"matmul", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX MatMul for a rank >= 2 left operand and a matrix";
  let description = [{
    `[..., M, K] x [K, N] -> [..., M, N]`; also `[K] x [K, N] -> [N]`.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Cell_RowMatMulOp : Cell_Op<"row_matmul", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "per batch row, the product of two matrices held in the row";
  let description = [{
    Attention over a per-request memory: every row of `lhs` holds an m x k
    matrix and every row of `rhs` a k x n matrix (row-major, in the order of
    their elements, whatever the operand's shape), or the operand is a weight
    without the batch holding one matrix for all rows. Row b of the
    [batch, m * n] result is lhs_b * rhs_b; `trans_lhs` and `trans_rhs` say
    the operand holds the transposed matrix (k x m, n x k). ONNX MatMul of
    [batch, m, k] by [batch, k, n] (torch.bmm) imports as this op. Code
    generation runs it in a kernel of its own, one block per row.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
                       I64Attr:$m, I64Attr:$k, I64Attr:$n,
                       BoolAttr:$trans_lhs, BoolAttr:$trans_rhs);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Cell_GemmOp : Cell_Op<"gemm", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Gemm: alpha * op(A) * op(B) + beta * C";
  let description = [{
    `op(X)` is `X` transposed when `trans_a`/`trans_b` is set. `C` is optional
    and broadcasts to `[M, N]`.
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b,
                       Optional<AnyRankedTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Cell_ConcatOp : Cell_Op<"concat", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Concat along `axis` (non-negative)";
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Cell_SplitOp : Cell_Op<"split", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Split into pieces of the given `sizes` along `axis`";
  let description = [{
    The sizes come from ONNX's `split` attribute (opset < 13), its constant
    `split` input (opset >= 13) or an even split; the importer resolves them.
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Cell_SliceOp : Cell_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Slice with resolved, in-range starts/ends and positive steps";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                       DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Cell_GatherOp : Cell_Op<"gather", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Gather (embedding lookup when `data` is a weight)";
  let description = [{
    `result.shape = data.shape[:axis] + indices.shape + data.shape[axis+1:]`.
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Cell_ArgMaxOp : Cell_Op<"argmax", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX ArgMax: int64 index of the largest element along `axis`";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Cell_SqueezeOp : Cell_Op<"squeeze", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Squeeze of the listed size-1 `axes`";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Cell_UnsqueezeOp : Cell_Op<"unsqueeze", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Unsqueeze: inserts size-1 dimensions at `axes` of the result";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Cell_ReshapeOp : Cell_Op<"reshape", [Pure]> {
  let summary = "ONNX Reshape; the target shape is the result type";
  let description = [{
    The importer resolves ONNX's shape input (with `0` and `-1`) into the
    result type. The batch dimension may move but must stay a single `?`.
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Cell_TransposeOp : Cell_Op<"transpose", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "ONNX Transpose by permutation `perm`";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

#endif // CELL_OPS_TD
