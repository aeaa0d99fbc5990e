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

def FoldTokenProjections : Pass<"cell-fold-token-projections",
                                 "mlir::cell::CellOp"> {
  let summary = "Fold an embedding lookup's projection into a lookup table";
  let description = [{
    `gemm(gather(E, tokens), W, c)` with constant `E` ([vocabulary, d]), `W`
    and a per-column `c` becomes `gather(T, tokens)` with the constant
    `T = alpha * E * W + beta * c` ([vocabulary, n]) computed here, in double
    and rounded once: a token-fed cell's input projection becomes a row
    lookup and the step multiplies only its state by the recurrent weights.
    Only where `T` is no larger than `E` and `W` together (or than 1 MiB)
    and than `max-table-bytes`. Run after cell-prepare-weights (which folds the two
    biases into one GEMM) and before cell-merge-gemms.
  }];
  let options = [
    Option<"maxTableBytes", "max-table-bytes", "int64_t",
           /*default=*/"int64_t(1) << 30",
           "Largest folded table to make (bytes)">,
  ];
  let dependentDialects = ["mlir::cell::CellDialect"];
}

def HoistInputProjections : Pass<"cell-hoist-input-projections",
                                   "mlir::ModuleOp"> {
  let summary = "Move a chain's input projection out of the step";
  let description = [{
    In a chain model, `gemm(x, W, c)` where `x` is a floating-point input
    argument used by nothing else, `W` a constant and `c` a constant per
    column (or none) becomes a cell of its own, `@<cell>_<x>_projection`
    (`x` in, the product out, role output, the same batch sizes), and the
    step's `x` becomes the product's row, marked
    `cell.projected_by = "<cell>_<x>_projection"`: the runtime runs the
    projection over all of a request's steps when it is admitted (as
    cuDNN and ONNX Runtime do for a whole sequence), and each step
    multiplies only its state by the recurrent weights. Run after
    cell-fold-token-projections (token inputs are folded instead) and
    before cell-merge-gemms.
  }];
  let dependentDialects = ["mlir::cell::CellDialect"];
}

def MergeGemms : Pass<"cell-merge-gemms", "mlir::cell::CellOp"> {
  let summary = "Merge x*Wx + h*Wh into one GEMM over [x, h]";
  let description = [{
    `add(gemm(x, Wx, b), gemm(h, Wh))` with constant weights, no transposes
    and unit alpha/beta becomes `gemm(concat(x, h), [Wx; Wh], b)`: the input
    and recurrent projections of an LSTM cell run as one GEMM with K = Kx +
    Kh. Sums of pieces of the products (GRU's gates, where the new-gate part
    `r * (h*Whn + bhn)` must stay separate) are left alone. Run after
    cell-prepare-weights.
  }];
  let dependentDialects = ["mlir::cell::CellDialect"];
}

def FuseElementwise : Pass<"cell-fuse-elementwise", "mlir::cell::CellOp"> {
  let summary = "Group the ops between GEMMs into cell.fused kernels";
  let description = [{
    Every maximal connected group of non-GEMM ops that lies between the same
    GEMMs (activations, gate arithmetic, split/slice of the gate tensor, bias
    adds, embedding lookups, concatenations, argmax) becomes one `cell.fused`
    op. Operands that are cell arguments are read by row index (`gather`),
    results returned by the cell are written to row-index destinations
    (`scatter`), weights are `broadcast`, everything else is a `dense`
    workspace buffer. Small constants are copied into the body.
  }];
  let dependentDialects = ["mlir::cell::CellDialect"];
}

def SpecializeBatch : Pass<"cell-specialize-batch", "mlir::ModuleOp"> {
  let summary = "One copy of every cell per supported batch size";
  let description = [{
    For each `cell.cell` with `cell.batch_sizes`, adds `@<cell>_b<N>` for
    every N, in which the batch dimension is the constant N (so code
    generation sees static shapes), tagged `cell.batch_size = N` and
    `cell.generic = @<cell>`. The generic cell stays: it carries the
    signature the runtime sees.
  }];
  let dependentDialects = ["mlir::cell::CellDialect"];
}

def FuseStep : Pass<"cell-fuse-step", "mlir::ModuleOp"> {
  let summary = "Make each small-batch step one kernel, GEMMs included";
  let description = [{
    In every batch-specialized cell whose batch size is at most `max-batch`,
    a step of the shape `prologue kernels -> GEMMs -> one epilogue kernel`
    (the epilogue scattering every result, each GEMM reading a prologue's
    buffer and read only by the epilogue) becomes a single `cell.fused`
    whose body holds the GEMMs too. Code generation computes each GEMM
    element there as a dot product over the weights, so a step is one launch:
    at small batch sizes a step is bound by launches and weight reads, not by
    arithmetic. Cells of another shape (a decoder's projection after its
    recurrent GEMM, say) keep their kernels. So do steps whose GEMM weights
    exceed `max-weight-bytes`: a thread per output column walks the whole
    reduction, which is cheap for small weights but leaves a large GEMM
    latency-bound on a few blocks (a hidden-1024 LSTM step took 2.4 ms
    fused on an H200, against 9 us for its GEMM), where the separate GEMM
    reads the weights once at the bandwidth of the whole device.
  }];
  let options = [Option<"maxBatch", "max-batch", "int64_t", "16",
                        "largest batch size whose steps become one kernel">,
                 Option<"maxWeightBytes", "max-weight-bytes", "int64_t",
                        "524288",
                        "largest total size of a step's GEMM weights for "
                        "the step to become one kernel">];
  let dependentDialects = ["mlir::cell::CellDialect"];
}

def PlanMemory : Pass<"cell-plan-memory", "mlir::ModuleOp"> {
  let summary = "Assign workspace offsets to the buffers of each batch size";
  let description = [{
    In every batch-specialized cell, each value that lives in the task's
    workspace (a GEMM result, a dense result of a fused kernel) gets a byte
    offset (`cell.offsets` on its op, -1 for values that are not in the
    workspace) so that buffers live at the same time never overlap. Buffers
    are 256-byte aligned. The cell records `cell.workspace_bytes` (the
    workspace a task needs), `cell.peak_bytes` (the largest sum of buffers
    live at one point, a lower bound the plan reaches when it does not
    fragment) and `cell.slot_bytes` (bytes of state rows one request holds:
    one row per state or child input and per state result).
  }];
  let dependentDialects = ["mlir::cell::CellDialect"];
}

#endif // CELL_TRANSFORMS_PASSES_TD
