// cell-prepare-weights: constant GEMM operands are transposed at compile
// time, the biases of gemm + gemm are merged, and nothing else changes.
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-prepare-weights))' -split-input-file | FileCheck %s
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-prepare-weights))' -split-input-file | cell-opt -split-input-file | FileCheck %s

// A small constant B with trans_b becomes its transpose, inline.
// CHECK-LABEL: cell.cell @small_trans_b
// CHECK: %[[BT:.*]] = constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK: gemm %arg0, %[[BT]] : (tensor<?x3xf32>, tensor<3x2xf32>) -> tensor<?x2xf32>
cell.cell @small_trans_b(%x: tensor<?x3xf32>) -> tensor<?x2xf32> {
  %w = cell.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %0 = cell.gemm %x, %w {trans_b = true} : (tensor<?x3xf32>, tensor<2x3xf32>) -> tensor<?x2xf32>
  cell.return %0 : tensor<?x2xf32>
}

// -----

// A weight blob is transposed into a new blob (its data checked below).
// CHECK-LABEL: cell.cell @blob_trans_b
// CHECK: %[[BT:.*]] = constant dense_resource<w.T> : tensor<5x4xf32>
// CHECK: gemm %arg0, %[[BT]] : (tensor<?x5xf32>, tensor<5x4xf32>) -> tensor<?x4xf32>
// CHECK: w.T: "0x40000000000000000000A04000002041000070410000803F0000C0400000304100008041000000400000E04000004041000088410000404000000041000050410000904100008040000010410000604100009841"
cell.cell @blob_trans_b(%x: tensor<?x5xf32>) -> tensor<?x4xf32> {
  %w = cell.constant dense_resource<w> : tensor<4x5xf32>
  %0 = cell.gemm %x, %w {trans_b = true} : (tensor<?x5xf32>, tensor<4x5xf32>) -> tensor<?x4xf32>
  cell.return %0 : tensor<?x4xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x04000000000000000000803F0000004000004040000080400000A0400000C0400000E040000000410000104100002041000030410000404100005041000060410000704100008041000088410000904100009841"
    }
  }
#-}

// -----

// trans_a with a constant A, and a transpose of a constant, fold too.
// CHECK-LABEL: cell.cell @trans_a_and_transpose
// CHECK-DAG: %[[AT:.*]] = constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK: gemm %[[AT]], %{{.*}} : (tensor<2x2xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
// CHECK: transpose %{{.*}} : (tensor<2x?xf32>) -> tensor<?x2xf32>
// CHECK: gemm %{{.*}}, %[[AT]] :
// CHECK-NOT: transpose
cell.cell @trans_a_and_transpose(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %a = cell.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %xt = cell.transpose %x {perm = array<i64: 1, 0>} : (tensor<?x2xf32>) -> tensor<2x?xf32>
  %0 = cell.gemm %a, %xt {trans_a = true} : (tensor<2x2xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  %1 = cell.transpose %0 {perm = array<i64: 1, 0>} : (tensor<2x?xf32>) -> tensor<?x2xf32>
  %t = cell.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %2 = cell.gemm %1, %t : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  cell.return %2 : tensor<?x2xf32>
}

// -----

// The two biases of gemm + gemm become one (b_ih + b_hh).
// CHECK-LABEL: cell.cell @merge_biases
// CHECK: %[[B:.*]] = constant dense<[1.100000e+01, 2.200000e+01]> : tensor<2xf32>
// CHECK: %[[G1:.*]] = gemm %arg0, %{{.*}}, %[[B]] : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
// CHECK: %[[G2:.*]] = gemm %arg1, %{{.*}} : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
// CHECK: add %[[G1]], %[[G2]]
cell.cell @merge_biases(%x: tensor<?x2xf32>, %h: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = cell.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %b1 = cell.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b2 = cell.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %0 = cell.gemm %x, %w, %b1 : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %1 = cell.gemm %h, %w, %b2 : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %2 = cell.add %0, %1 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  cell.return %2 : tensor<?x2xf32>
}

// -----

// Not rewritten: B is not a constant; a bias scaled by beta != 1; a GEMM
// whose result is used twice (merging would change the other use).
// CHECK-LABEL: cell.cell @left_alone
// CHECK: %[[S:.*]] = sigmoid
// CHECK: gemm %arg0, %[[S]] {trans_b = true}
// CHECK: gemm %arg0, %{{.*}}, %{{.*}} {beta = 2.000000e+00 : f32}
// CHECK: gemm %arg1, %{{.*}}, %{{.*}} :
// CHECK: gemm %arg0, %{{.*}}, %{{.*}} :
// CHECK: gemm %arg1, %{{.*}}, %{{.*}} :
cell.cell @left_alone(%x: tensor<?x2xf32>, %h: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = cell.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %b1 = cell.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b2 = cell.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %s = cell.sigmoid %w : tensor<2x2xf32>
  %0 = cell.gemm %x, %s {trans_b = true} : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %1 = cell.gemm %x, %w, %b1 {beta = 2.0 : f32} : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %2 = cell.gemm %h, %w, %b2 : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %3 = cell.add %1, %2 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %4 = cell.gemm %x, %w, %b1 : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %5 = cell.gemm %h, %w, %b2 : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %6 = cell.add %4, %5 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  cell.return %0, %3, %6, %4 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// A [1, N] or scalar bias (legal ONNX broadcasts) becomes an [N] vector.
// CHECK-LABEL: cell.cell @bias_shapes
// CHECK-DAG: %[[ROW:.*]] = constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[ONE:.*]] = constant dense<5.000000e-01> : tensor<2xf32>
// CHECK: gemm %arg0, %{{.*}}, %[[ROW]] : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
// CHECK: gemm %arg0, %{{.*}}, %[[ONE]] : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
cell.cell @bias_shapes(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = cell.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %row = cell.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %one = cell.constant dense<0.5> : tensor<f32>
  %0 = cell.gemm %x, %w, %row : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<1x2xf32>) -> tensor<?x2xf32>
  %1 = cell.gemm %x, %w, %one : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  cell.return %0, %1 : tensor<?x2xf32>, tensor<?x2xf32>
}
