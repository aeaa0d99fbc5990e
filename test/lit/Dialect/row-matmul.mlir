// row_matmul: per batch row an m x k by k x n product of matrices held in the
// rows (or a weight), whatever the operands' shapes; views in front of the
// operands fold away; the result is [batch, m * n].
//
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/valid.mlir --canonicalize | FileCheck %s --check-prefix=FOLD
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir

// CHECK-LABEL: cell.cell @attend(
// FOLD-LABEL: cell.cell @attend(
cell.cell @attend(%memory: tensor<?x5x8xf32> {cell.name = "memory"}, %q: tensor<?x8xf32> {cell.name = "q"})
    -> (tensor<?x5xf32>, tensor<?x8xf32>, tensor<?x5xf32>) {
  %v = cell.constant dense<0.5> : tensor<8xf32>
  %q3 = cell.unsqueeze %q {axes = array<i64: 2>} : (tensor<?x8xf32>) -> tensor<?x8x1xf32>
  // CHECK: row_matmul %memory, %{{.*}} {k = 8 : i64, m = 5 : i64, n = 1 : i64, trans_lhs = false, trans_rhs = false} : (tensor<?x5x8xf32>, tensor<?x8x1xf32>) -> tensor<?x5xf32>
  // FOLD: %[[S:.*]] = row_matmul %memory, %q {{.*}} : (tensor<?x5x8xf32>, tensor<?x8xf32>) -> tensor<?x5xf32>
  %s = cell.row_matmul %memory, %q3 {m = 5, k = 8, n = 1, trans_lhs = false, trans_rhs = false} : (tensor<?x5x8xf32>, tensor<?x8x1xf32>) -> tensor<?x5xf32>
  // CHECK: row_matmul %{{.*}}, %memory {k = 5 : i64, m = 1 : i64, n = 8 : i64, {{.*}}} : (tensor<?x5xf32>, tensor<?x5x8xf32>) -> tensor<?x8xf32>
  %c = cell.row_matmul %s, %memory {m = 1, k = 5, n = 8, trans_lhs = false, trans_rhs = false} : (tensor<?x5xf32>, tensor<?x5x8xf32>) -> tensor<?x8xf32>
  // A weight vector on the right, shared by every row.
  // CHECK: row_matmul %memory, %{{.*}} {{.*}} : (tensor<?x5x8xf32>, tensor<8xf32>) -> tensor<?x5xf32>
  %p = cell.row_matmul %memory, %v {m = 5, k = 8, n = 1, trans_lhs = false, trans_rhs = false} : (tensor<?x5x8xf32>, tensor<8xf32>) -> tensor<?x5xf32>
  cell.return %s, %c, %p : tensor<?x5xf32>, tensor<?x8xf32>, tensor<?x5xf32>
}

//--- invalid.mlir

cell.cell @sizes(%memory: tensor<?x5x8xf32>, %q: tensor<?x8xf32>) {
  // expected-error @+1 {{the left operand 'tensor<?x5x8xf32>' does not hold 32-element matrices a row}}
  %s = cell.row_matmul %memory, %q {m = 4, k = 8, n = 1, trans_lhs = false, trans_rhs = false} : (tensor<?x5x8xf32>, tensor<?x8xf32>) -> tensor<?x4xf32>
  cell.return
}

// -----

cell.cell @weight_rows(%a: tensor<?x8xf32>) {
  %b = cell.constant dense<1.0> : tensor<2x8xf32>
  // expected-error @+1 {{an operand without the batch must hold one matrix (a weight)}}
  %s = cell.row_matmul %a, %b {m = 1, k = 8, n = 1, trans_lhs = false, trans_rhs = false} : (tensor<?x8xf32>, tensor<2x8xf32>) -> tensor<?x1xf32>
  cell.return
}

// -----

// After batch specialisation the batch is static: matrices are counted.
cell.cell @batches() {
  %a = cell.constant dense<1.0> : tensor<4x8xf32>
  %b = cell.constant dense<1.0> : tensor<2x8xf32>
  // expected-error @+1 {{the operands hold 4 and 2 matrices}}
  %s = cell.row_matmul %a, %b {m = 1, k = 8, n = 1, trans_lhs = false, trans_rhs = false} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x1xf32>
  cell.return
}

// -----

cell.cell @positive(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) {
  // expected-error @+1 {{m, k and n must be positive}}
  %s = cell.row_matmul %a, %b {m = 0, k = 8, n = 1, trans_lhs = false, trans_rhs = false} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x0xf32>
  cell.return
}
