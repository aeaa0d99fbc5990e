// The unary ops state-space steps need: softplus (Mamba's dt) and neg
// (A = -exp(A_log)) keep the type and accept every floating-point type, also
// on rows that hold matrices; integers are refused.
// RUN: rm -rf %t && mkdir -p %t
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir
// CHECK-LABEL: cell.cell @state_space(
// CHECK-NEXT: %[[P:[0-9]+]] = softplus %arg0 : tensor<?x8xf32>
// CHECK-NEXT: %[[N:[0-9]+]] = neg %arg1 : tensor<?x8x16xf32>
// CHECK-NEXT: %[[E:[0-9]+]] = exp %[[N]] : tensor<?x8x16xf32>
// CHECK-NEXT: %[[H:[0-9]+]] = softplus %arg2 : tensor<?x4xf16>
// CHECK-NEXT: return %[[P]], %[[E]], %[[H]] : tensor<?x8xf32>, tensor<?x8x16xf32>, tensor<?x4xf16>
cell.cell @state_space(%dt: tensor<?x8xf32>, %ssm: tensor<?x8x16xf32>,
                       %h: tensor<?x4xf16>)
    -> (tensor<?x8xf32>, tensor<?x8x16xf32>, tensor<?x4xf16>) {
  %0 = cell.softplus %dt : tensor<?x8xf32>
  %1 = cell.neg %ssm : tensor<?x8x16xf32>
  %2 = cell.exp %1 : tensor<?x8x16xf32>
  %3 = cell.softplus %h : tensor<?x4xf16>
  cell.return %0, %2, %3 : tensor<?x8xf32>, tensor<?x8x16xf32>, tensor<?x4xf16>
}

//--- invalid.mlir
cell.cell @softplus_int(%x: tensor<?x8xi32>) {
  // expected-error @+1 {{'cell.softplus' op expects a floating-point tensor, got 'tensor<?x8xi32>'}}
  %0 = cell.softplus %x : tensor<?x8xi32>
  cell.return
}

// -----

cell.cell @neg_int(%x: tensor<?x8xi64>) {
  // expected-error @+1 {{'cell.neg' op expects a floating-point tensor, got 'tensor<?x8xi64>'}}
  %0 = cell.neg %x : tensor<?x8xi64>
  cell.return
}
