// Matrix products: matmul ([..., M, K] x [K, N], [K] x [K, N]) and gemm
// (trans_a/trans_b, optional C that broadcasts to [M, N], alpha/beta).
//
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/valid.mlir > %t.1 && cell-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir

// CHECK-LABEL: cell.cell @matmul(
cell.cell @matmul(%x: tensor<?x8xf32> {cell.name = "x"}, %v: tensor<?x2x8xf32> {cell.name = "v"})
    -> (tensor<?x16xf32>, tensor<?x2x16xf32>, tensor<?x16xf32>) {
  // CHECK-DAG: %[[W:[0-9]+]] = constant dense<1.000000e+00> : tensor<8x16xf32>
  // CHECK-DAG: %[[K:[0-9]+]] = constant dense<5.000000e-01> : tensor<8xf32>
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  %k = cell.constant dense<0.5> : tensor<8xf32>
  // A batch of rows times a matrix.
  // CHECK: %[[M0:[0-9]+]] = matmul %x, %[[W]] : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %0 = cell.matmul %x, %w : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  // Leading dimensions of a rank > 2 left operand are kept.
  // CHECK-NEXT: %[[M1:[0-9]+]] = matmul %v, %[[W]] : (tensor<?x2x8xf32>, tensor<8x16xf32>) -> tensor<?x2x16xf32>
  %1 = cell.matmul %v, %w : (tensor<?x2x8xf32>, tensor<8x16xf32>) -> tensor<?x2x16xf32>
  // A vector times a matrix is a vector.
  // CHECK-NEXT: %[[M2:[0-9]+]] = matmul %[[K]], %[[W]] : (tensor<8xf32>, tensor<8x16xf32>) -> tensor<16xf32>
  %2 = cell.matmul %k, %w : (tensor<8xf32>, tensor<8x16xf32>) -> tensor<16xf32>
  // CHECK-NEXT: %[[S:[0-9]+]] = add %[[M0]], %[[M2]] :
  %3 = cell.add %0, %2 : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  // CHECK-NEXT: return %[[M0]], %[[M1]], %[[S]] :
  cell.return %0, %1, %3 : tensor<?x16xf32>, tensor<?x2x16xf32>, tensor<?x16xf32>
}

// CHECK-LABEL: cell.cell @gemm(
cell.cell @gemm(%x: tensor<?x8xf32> {cell.name = "x"}, %h: tensor<?x16xf32> {cell.name = "h"})
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>,
        tensor<?x16xf32>, tensor<?x8xf32>) {
  // CHECK-DAG: %[[W:[0-9]+]] = constant dense<1.000000e+00> : tensor<8x16xf32>
  // CHECK-DAG: %[[WT:[0-9]+]] = constant dense<2.000000e+00> : tensor<16x8xf32>
  // CHECK-DAG: %[[B:[0-9]+]] = constant dense<5.000000e-01> : tensor<16xf32>
  // CHECK-DAG: %[[B2:[0-9]+]] = constant dense<2.500000e-01> : tensor<1x16xf32>
  // CHECK-DAG: %[[B0:[0-9]+]] = constant dense<1.250000e-01> : tensor<f32>
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  %wt = cell.constant dense<2.0> : tensor<16x8xf32>
  %b = cell.constant dense<0.5> : tensor<16xf32>
  %b2 = cell.constant dense<0.25> : tensor<1x16xf32>
  %b0 = cell.constant dense<0.125> : tensor<f32>
  // No C, default attributes: nothing is printed in the attribute dictionary.
  // CHECK: %[[G0:[0-9]+]] = gemm %x, %[[W]] : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %0 = cell.gemm %x, %w : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  // trans_b with a rank-1 C (the usual nn.Linear export).
  // CHECK-NEXT: %[[G1:[0-9]+]] = gemm %x, %[[WT]], %[[B]] {trans_b = true} : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %1 = cell.gemm %x, %wt, %b {trans_b = true} : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  // alpha/beta are kept and a [1, N] C broadcasts over the batch.
  // CHECK-NEXT: %[[G2:[0-9]+]] = gemm %x, %[[W]], %[[B2]] {alpha = 2.000000e+00 : f32, beta = 5.000000e-01 : f32} : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<?x16xf32>
  %2 = cell.gemm %x, %w, %b2 {alpha = 2.0 : f32, beta = 0.5 : f32} : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<?x16xf32>
  // A batched C of the product's shape; explicit default attributes are not printed.
  // CHECK-NEXT: %[[G3:[0-9]+]] = gemm %x, %[[W]], %h : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %3 = cell.gemm %x, %w, %h {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  // A rank-0 C.
  // CHECK-NEXT: %[[G4:[0-9]+]] = gemm %x, %[[W]], %[[B0]] : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  %4 = cell.gemm %x, %w, %b0 : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  // trans_a and trans_b: [8,16]^T x [B,8]^T = [16, B].
  // CHECK-NEXT: %[[G5:[0-9]+]] = gemm %[[W]], %x {trans_a = true, trans_b = true} : (tensor<8x16xf32>, tensor<?x8xf32>) -> tensor<16x?xf32>
  %5 = cell.gemm %w, %x {trans_a = true, trans_b = true} : (tensor<8x16xf32>, tensor<?x8xf32>) -> tensor<16x?xf32>
  // CHECK-NEXT: %[[G5T:[0-9]+]] = transpose %[[G5]] {perm = array<i64: 1, 0>} : (tensor<16x?xf32>) -> tensor<?x16xf32>
  %t5 = cell.transpose %5 {perm = array<i64: 1, 0>} : (tensor<16x?xf32>) -> tensor<?x16xf32>
  // trans_a alone: [16,8]^T x [16,8] = [8,8] (static), then used as a matmul weight.
  // CHECK-NEXT: %[[G6:[0-9]+]] = gemm %[[WT]], %[[WT]] {trans_a = true} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %6 = cell.gemm %wt, %wt {trans_a = true} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  // CHECK-NEXT: %[[G7:[0-9]+]] = matmul %x, %[[G6]] : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %7 = cell.matmul %x, %6 : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  // CHECK-NEXT: return %[[G0]], %[[G1]], %[[G2]], %[[G3]], %[[G4]], %[[G5T]], %[[G7]] :
  cell.return %0, %1, %2, %3, %4, %t5, %7 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>,
                                            tensor<?x16xf32>, tensor<?x8xf32>
}

//--- invalid.mlir

// matmul: the contracted dimensions must agree.
cell.cell @matmul_contraction(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<4x16xf32>
  // expected-error @+1 {{contracted dimensions differ: 8 vs 4}}
  %0 = cell.matmul %x, %w : (tensor<?x8xf32>, tensor<4x16xf32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// matmul: the right operand is a matrix.
cell.cell @matmul_rhs_rank(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<2x8x16xf32>
  // expected-error @+1 {{expects a left operand of rank >= 1 and a matrix on the right}}
  %0 = cell.matmul %x, %w : (tensor<?x8xf32>, tensor<2x8x16xf32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// matmul: a rank-0 left operand is rejected.
cell.cell @matmul_lhs_rank(%x: tensor<?x8xf32>) {
  %s = cell.constant dense<1.0> : tensor<f32>
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  // expected-error @+1 {{expects a left operand of rank >= 1 and a matrix on the right}}
  %0 = cell.matmul %s, %w : (tensor<f32>, tensor<8x16xf32>) -> tensor<16xf32>
  cell.return
}

// -----

// matmul: contracting over the dynamic batch (rows x rows) is rejected.
cell.cell @matmul_batch_contraction(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{the contracted dimension must be static, not the batch}}
  %0 = cell.matmul %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// matmul: the operands have one element type.
cell.cell @matmul_element_types(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf16>
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = cell.matmul %x, %w : (tensor<?x8xf32>, tensor<8x16xf16>) -> tensor<?x16xf32>
  cell.return
}

// -----

// matmul: the declared result must be [..., M, N].
cell.cell @matmul_result(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  // expected-error @+1 {{'cell.matmul' op inferred type(s) 'tensor<?x16xf32>' are incompatible with return type(s) of operation 'tensor<?x8xf32>'}}
  %0 = cell.matmul %x, %w : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// gemm: A must be a matrix.
cell.cell @gemm_a_rank(%x: tensor<?x2x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  // expected-error @+1 {{A and B must be matrices}}
  %0 = cell.gemm %x, %w : (tensor<?x2x8xf32>, tensor<8x16xf32>) -> tensor<?x2x16xf32>
  cell.return
}

// -----

// gemm: B must be a matrix.
cell.cell @gemm_b_rank(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8xf32>
  // expected-error @+1 {{A and B must be matrices}}
  %0 = cell.gemm %x, %w : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?xf32>
  cell.return
}

// -----

// gemm: trans_b transposes B before contracting ([B,8] x [16,8]^T is fine, [8,16]^T is not).
cell.cell @gemm_trans_b_contraction(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  // expected-error @+1 {{contracted dimensions differ: 8 vs 16}}
  %0 = cell.gemm %x, %w {trans_b = true} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// gemm: trans_a on a batch of rows contracts over the batch.
cell.cell @gemm_trans_a_batch(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  // expected-error @+1 {{the contracted dimension must be static, not the batch}}
  %0 = cell.gemm %x, %w {trans_a = true} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  cell.return
}

// -----

// gemm: B with the batch in its contracted dimension.
cell.cell @gemm_b_batch(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<1x8xf32>
  // expected-error @+1 {{the contracted dimension must be static, not the batch}}
  %0 = cell.gemm %w, %x : (tensor<1x8xf32>, tensor<?x8xf32>) -> tensor<1x8xf32>
  cell.return
}

// -----

// gemm: A and B have one element type.
cell.cell @gemm_element_types(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1> : tensor<8x16xi32>
  // expected-error @+1 {{element types differ: 'f32' and 'i32'}}
  %0 = cell.gemm %x, %w : (tensor<?x8xf32>, tensor<8x16xi32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// gemm: C has A's element type.
cell.cell @gemm_c_element_type(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  %c = cell.constant dense<1> : tensor<16xi32>
  // expected-error @+1 {{element types differ: 'f32' and 'i32'}}
  %0 = cell.gemm %x, %w, %c : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<16xi32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// gemm: C has rank <= 2.
cell.cell @gemm_c_rank(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  %c = cell.constant dense<1.0> : tensor<1x1x16xf32>
  // expected-error @+1 {{C must have rank <= 2}}
  %0 = cell.gemm %x, %w, %c : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<1x1x16xf32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// gemm: a C of N' != N does not broadcast.
cell.cell @gemm_c_columns(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  %c = cell.constant dense<1.0> : tensor<8xf32>
  // expected-error @+1 {{dimensions 16 and 8 do not broadcast}}
  %0 = cell.gemm %x, %w, %c : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// gemm: a C with static rows does not broadcast against the batch.
cell.cell @gemm_c_rows(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  %c = cell.constant dense<1.0> : tensor<4x16xf32>
  // expected-error @+1 {{the dynamic batch dimension cannot broadcast against size 4}}
  %0 = cell.gemm %x, %w, %c : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// gemm: C may only broadcast to [M, N], not widen it.
cell.cell @gemm_c_wider(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x1xf32>
  %c = cell.constant dense<1.0> : tensor<1x16xf32>
  // expected-error @+1 {{C of type 'tensor<1x16xf32>' does not broadcast to the product's shape}}
  %0 = cell.gemm %x, %w, %c : (tensor<?x8xf32>, tensor<8x1xf32>, tensor<1x16xf32>) -> tensor<?x1xf32>
  cell.return
}

// -----

// gemm: alpha is an f32 attribute.
cell.cell @gemm_alpha_type(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  // expected-error @+1 {{'cell.gemm' op attribute 'alpha' failed to satisfy constraint: 32-bit float attribute}}
  %0 = cell.gemm %x, %w {alpha = 1.0 : f64} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// gemm: the declared result must be [M, N].
cell.cell @gemm_result(%x: tensor<?x8xf32>) {
  %w = cell.constant dense<1.0> : tensor<8x16xf32>
  // expected-error @+1 {{'cell.gemm' op inferred type(s) 'tensor<?x16xf32>' are incompatible with return type(s) of operation 'tensor<?x8xf32>'}}
  %0 = cell.gemm %x, %w : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// gemm: rows x rows^T would be [B, B], a tensor with two batch dimensions.
cell.cell @gemm_two_batch_dims(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{more than one dynamic (batch) dimension}}
  %0 = cell.gemm %x, %x {trans_b = true} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x?xf32>
  cell.return
}
