// cell-hoist-input-projections: in a chain, the projection of a feature
// input becomes a cell of its own that the runtime runs at admission; the
// step reads the product where it read the input.
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell-hoist-input-projections)' -split-input-file -verify-diagnostics | FileCheck %s
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell-hoist-input-projections)' -split-input-file -verify-diagnostics | cell-opt -split-input-file | FileCheck %s

// A GRU-like step: x * W + b moves out; h * Wh stays.
// CHECK-LABEL: module attributes {cell.unfolding = {structure = "chain"}}
// CHECK: cell.cell @step_x_projection(%x: tensor<?x3xf32> {cell.name = "x", cell.role = #cell.role<input>}) -> (tensor<?x2xf32> {cell.name = "x", cell.role = #cell.role<output>})
// CHECK-SAME: cell.batch_sizes = array<i64: 1, 4>
// CHECK-NEXT: %[[W:.*]] = constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NEXT: %[[B:.*]] = constant dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK-NEXT: %[[P:.*]] = gemm %x, %[[W]], %[[B]] : (tensor<?x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
// CHECK-NEXT: return %[[P]] : tensor<?x2xf32>
// CHECK: cell.cell @step(%x: tensor<?x2xf32> {cell.name = "x", cell.projected_by = "step_x_projection", cell.role = #cell.role<input>}, %h: tensor<?x2xf32>
// CHECK-NOT: gemm %x
// CHECK: %[[H:.*]] = gemm %h
// CHECK: add %x, %[[H]]
module attributes {cell.unfolding = {structure = "chain"}} {
  cell.cell @step(%x: tensor<?x3xf32> {cell.name = "x", cell.role = #cell.role<input>},
                  %h: tensor<?x2xf32> {cell.name = "h", cell.role = #cell.role<state>})
      -> (tensor<?x2xf32> {cell.name = "h_next", cell.role = #cell.role<state>, cell.updates = "h"})
      attributes {cell.batch_sizes = array<i64: 1, 4>} {
    %w = cell.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
    %wh = cell.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
    %b = cell.constant dense<[0.5, 0.25]> : tensor<2xf32>
    %0 = cell.gemm %x, %w, %b : (tensor<?x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
    %1 = cell.gemm %h, %wh : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
    %2 = cell.add %0, %1 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %3 = cell.tanh %2 : tensor<?x2xf32>
    cell.return %3 : tensor<?x2xf32>
  }
}

// -----

// Left alone: an input read by more than its projection, a bias per row
// and a weight computed at run time.
// CHECK-LABEL: module attributes {cell.unfolding = {structure = "chain"}}
// CHECK-NOT: projection
// CHECK: cell.cell @left_alone
// CHECK-COUNT-3: gemm
module attributes {cell.unfolding = {structure = "chain"}} {
  cell.cell @left_alone(%twice: tensor<?x2xf32> {cell.name = "twice", cell.role = #cell.role<input>},
                        %rowBiased: tensor<?x2xf32> {cell.name = "row_biased", cell.role = #cell.role<input>},
                        %bias: tensor<?x2xf32> {cell.name = "bias", cell.role = #cell.role<input>},
                        %computed: tensor<?x2xf32> {cell.name = "computed", cell.role = #cell.role<input>})
      -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
    %w = cell.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %0 = cell.gemm %twice, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
    %1 = cell.add %0, %twice : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %2 = cell.gemm %rowBiased, %w, %bias : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %wr = cell.tanh %w : tensor<2x2xf32>
    %3 = cell.gemm %computed, %wr : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
    cell.return %1, %2, %3 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
  }
}

// -----

// Only a chain's inputs move: a seq2seq encoder keeps its projection.
// CHECK-LABEL: module attributes {cell.unfolding = {structure = "seq2seq"}}
// CHECK-NOT: projection
// CHECK: gemm %x
module attributes {cell.unfolding = {structure = "seq2seq"}} {
  cell.cell @encoder(%x: tensor<?x2xf32> {cell.name = "x", cell.role = #cell.role<input>}) -> tensor<?x2xf32> {
    %w = cell.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %0 = cell.gemm %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
    cell.return %0 : tensor<?x2xf32>
  }
}

// -----

// The projection cell's name is taken: the projection stays, with a warning.
// CHECK-LABEL: module attributes {cell.unfolding = {structure = "chain"}}
// CHECK: cell.cell @taken_x_projection
// CHECK: cell.cell @taken
// CHECK: gemm %x
module attributes {cell.unfolding = {structure = "chain"}} {
  cell.cell @taken_x_projection(%y: tensor<?x2xf32>) -> tensor<?x2xf32> {
    cell.return %y : tensor<?x2xf32>
  }
  // expected-warning @+1 {{input 'x' keeps its projection in the step: the name 'taken_x_projection' is taken}}
  cell.cell @taken(%x: tensor<?x2xf32> {cell.name = "x", cell.role = #cell.role<input>}) -> tensor<?x2xf32> {
    %w = cell.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %0 = cell.gemm %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
    cell.return %0 : tensor<?x2xf32>
  }
}
