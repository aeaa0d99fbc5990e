//===- Passes.td - Passes over the `cell` dialect ------------*- tablegen -*-===//
#ifndef CELL_TRANSFORMS_PASSES_TD
#define CELL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrepareWeights : Pass<"cell-prepare-weights", "mlir::cell::CellOp"> {
  let summary = "Pre-transpose constant GEMM weights and fold bias pairs";
  let description = [{
    Rewrites what exporters emit for the projections of a recurrent cell into
    the form the code generator wants, once, at compile time:

    - `gemm(x, W, b) {trans_b}` with a constant `W` becomes
      `gemm(x, W', b)` where `W'` is `W` transposed into a new weight blob;
      likewise `trans_a` with a constant `A`, and a `transpose` of a constant;
    - `add(gemm(x, Wx, bx), gemm(h, Wh, bh))` with constant biases of the
      same type and `beta = 1` becomes `add(gemm(x, Wx, bx + bh), gemm(h, Wh))`
      (the `b_ih + b_hh` of LSTM and GRU cells), so one bias is added.
  }];
  let dependentDialects = ["mlir::cell::CellDialect"];
}

#endif // CELL_TRANSFORMS_PASSES_TD
