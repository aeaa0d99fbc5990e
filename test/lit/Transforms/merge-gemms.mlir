// cell-merge-gemms: x*Wx + h*Wh (+ b) becomes one GEMM over [x, h] with the
// weights stacked by rows; sums that are not whole projections stay.
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-merge-gemms))' -split-input-file | FileCheck %s
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-merge-gemms))' -split-input-file | cell-opt -split-input-file | FileCheck %s

// The LSTM shape: two projections into the same gate tensor, one bias.
// CHECK-LABEL: cell.cell @lstm_like
// CHECK-DAG: %[[W:.*]] = constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00], [9.000000e+00, 1.000000e+01]]> : tensor<5x2xf32>
// CHECK-DAG: %[[B:.*]] = constant dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK: %[[XH:.*]] = concat %arg0, %arg1 {axis = 1 : i64} : (tensor<?x3xf32>, tensor<?x2xf32>) -> tensor<?x5xf32>
// CHECK: %[[G:.*]] = gemm %[[XH]], %[[W]], %[[B]] : (tensor<?x5xf32>, tensor<5x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
// CHECK: tanh %[[G]]
// CHECK-NOT: gemm
cell.cell @lstm_like(%x: tensor<?x3xf32>, %h: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %wx = cell.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %wh = cell.constant dense<[[7.0, 8.0], [9.0, 10.0]]> : tensor<2x2xf32>
  %b = cell.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %0 = cell.gemm %x, %wx, %b : (tensor<?x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %1 = cell.gemm %h, %wh : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %2 = cell.add %0, %1 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %3 = cell.tanh %2 : tensor<?x2xf32>
  cell.return %3 : tensor<?x2xf32>
}

// -----

// Left alone: a transposed weight (run cell-prepare-weights first), a weight
// computed at run time, two biases, a product read twice, and the GRU's sums
// of pieces of the products (split before the add).
// CHECK-LABEL: cell.cell @left_alone
// CHECK-COUNT-10: gemm
// CHECK-NOT: concat
cell.cell @left_alone(%x: tensor<?x2xf32>, %h: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>, tensor<?x2xf32>) {
  %w = cell.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = cell.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %t0 = cell.gemm %x, %w {trans_b = true} : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %t1 = cell.gemm %h, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %t = cell.add %t0, %t1 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %s = cell.sigmoid %w : tensor<2x2xf32>
  %r0 = cell.gemm %x, %s : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %r1 = cell.gemm %h, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %r = cell.add %r0, %r1 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %b0 = cell.gemm %x, %w, %b : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %b1 = cell.gemm %h, %w, %b : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %bb = cell.add %b0, %b1 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %u0 = cell.gemm %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %u1 = cell.gemm %h, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %u = cell.add %u0, %u1 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %g0 = cell.gemm %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %g1 = cell.gemm %h, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %p0:2 = cell.split %g0 {axis = 1 : i64, sizes = array<i64: 1, 1>} : (tensor<?x2xf32>) -> (tensor<?x1xf32>, tensor<?x1xf32>)
  %p1:2 = cell.split %g1 {axis = 1 : i64, sizes = array<i64: 1, 1>} : (tensor<?x2xf32>) -> (tensor<?x1xf32>, tensor<?x1xf32>)
  %g = cell.add %p0#0, %p1#0 : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  cell.return %t, %r, %bb, %u, %g, %u0 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>, tensor<?x2xf32>
}
