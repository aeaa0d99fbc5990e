// cell-fold-token-projections: the projection of an embedding lookup becomes
// a lookup of a table computed at compile time (T = alpha * E * W + beta * c);
// tables larger than what they replace, or than max-table-bytes, are not made.
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-fold-token-projections))' -split-input-file | FileCheck %s
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-fold-token-projections))' -split-input-file | cell-opt -split-input-file | FileCheck %s
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-fold-token-projections{max-table-bytes=16}))' -split-input-file | FileCheck %s --check-prefix=LIMIT

// E [3, 2] times W [2, 2] plus c: row v of T is E[v] * W + c.
// CHECK-LABEL: cell.cell @token_step
// CHECK: %[[T:.*]] = constant dense<{{\[\[}}7.500000e+00, 1.025000e+01], [1.550000e+01, 2.225000e+01], [2.350000e+01, 3.425000e+01]]> : tensor<3x2xf32>
// CHECK: %[[X:.*]] = gather %[[T]], %arg0 : (tensor<3x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
// CHECK: %[[H:.*]] = gemm %arg1
// CHECK: add %[[X]], %[[H]]
// CHECK-NOT: gemm
// LIMIT-LABEL: cell.cell @token_step
// LIMIT-COUNT-2: gemm
cell.cell @token_step(%token: tensor<?xi64>, %h: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %e = cell.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %w = cell.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wh = cell.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %b = cell.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %x = cell.gather %e, %token : (tensor<3x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
  %0 = cell.gemm %x, %w, %b : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %1 = cell.gemm %h, %wh : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %2 = cell.add %0, %1 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  cell.return %2 : tensor<?x2xf32>
}

// -----

// A transposed weight, alpha and beta: T = 2 * E * W^T + 0.5 * c.
// CHECK-LABEL: cell.cell @scaled
// CHECK: constant dense<{{\[\[}}1.450000e+01, 2.100000e+01], [3.050000e+01, 4.500000e+01], [4.650000e+01, 6.900000e+01]]> : tensor<3x2xf32>
// CHECK-NOT: gemm
cell.cell @scaled(%token: tensor<?xi64>) -> tensor<?x2xf32> {
  %e = cell.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %w = cell.constant dense<[[1.0, 3.0], [2.0, 4.0]]> : tensor<2x2xf32>
  %b = cell.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %x = cell.gather %e, %token : (tensor<3x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
  %0 = cell.gemm %x, %w, %b {alpha = 2.0 : f32, beta = 0.5 : f32, trans_b = true} : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  cell.return %0 : tensor<?x2xf32>
}

// -----

// Left alone: a lookup table computed at run time, a weight computed at run
// time, and a bias per row (a table past max-table-bytes: the LIMIT run).
// CHECK-LABEL: cell.cell @left_alone
// CHECK-COUNT-3: gemm
cell.cell @left_alone(%token: tensor<?xi64>, %rowBias: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x4xf32>) {
  %e2 = cell.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %w = cell.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %w4 = cell.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %table = cell.tanh %e2 : tensor<3x2xf32>
  %y = cell.gather %table, %token : (tensor<3x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
  %1 = cell.gemm %y, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %z = cell.gather %e2, %token : (tensor<3x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
  %s = cell.sigmoid %w : tensor<2x2xf32>
  %2 = cell.gemm %z, %s : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %3 = cell.gemm %z, %w4, %rowBias : (tensor<?x2xf32>, tensor<2x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  cell.return %1, %2, %3 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x4xf32>
}
