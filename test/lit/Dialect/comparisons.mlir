// The comparisons (less, less_or_equal, greater, greater_or_equal: i1 results
// under numpy broadcasting, operands of one element type) and not (i1 only).
//
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir

// CHECK-LABEL: cell.cell @compare(
cell.cell @compare(%x: tensor<?x8xf32> {cell.name = "x"}, %i: tensor<?x8xi64> {cell.name = "i"})
    -> (tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>) {
  %zero = cell.constant dense<0.0> : tensor<f32>
  %limit = cell.constant dense<3> : tensor<8xi64>
  // CHECK: %[[L:[0-9]+]] = less %x, %{{[0-9]+}} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xi1>
  %0 = cell.less %x, %zero : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xi1>
  // CHECK-NEXT: less_or_equal %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xi1>
  %1 = cell.less_or_equal %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xi1>
  // CHECK-NEXT: greater %i, %{{[0-9]+}} : (tensor<?x8xi64>, tensor<8xi64>) -> tensor<?x8xi1>
  %2 = cell.greater %i, %limit : (tensor<?x8xi64>, tensor<8xi64>) -> tensor<?x8xi1>
  // CHECK-NEXT: greater_or_equal %{{[0-9]+}}, %x : (tensor<f32>, tensor<?x8xf32>) -> tensor<?x8xi1>
  %3 = cell.greater_or_equal %zero, %x : (tensor<f32>, tensor<?x8xf32>) -> tensor<?x8xi1>
  // CHECK-NEXT: not %[[L]] : (tensor<?x8xi1>) -> tensor<?x8xi1>
  %4 = cell.not %0 : (tensor<?x8xi1>) -> tensor<?x8xi1>
  cell.return %0, %1, %2, %3, %4 : tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>
}

//--- invalid.mlir

// A comparison's operands have one element type.
cell.cell @mixed(%x: tensor<?x8xf32>, %i: tensor<?x8xi64>) {
  // expected-error @+1 {{element types differ: 'f32' and 'i64'}}
  %0 = cell.less %x, %i : (tensor<?x8xf32>, tensor<?x8xi64>) -> tensor<?x8xi1>
  cell.return
}

// -----

// Its result is i1.
cell.cell @float_result(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.greater' op inferred type(s) 'tensor<?x8xi1>' are incompatible with return type(s) of operation 'tensor<?x8xf32>'}}
  %0 = cell.greater %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// Shapes broadcast as numpy's do.
cell.cell @shapes(%x: tensor<?x8xf32>, %y: tensor<?x3xf32>) {
  // expected-error @+1 {{dimensions 8 and 3 do not broadcast}}
  %0 = cell.greater_or_equal %x, %y : (tensor<?x8xf32>, tensor<?x3xf32>) -> tensor<?x8xi1>
  cell.return
}

// -----

// Not takes i1 only.
cell.cell @not_float(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{Not needs an i1 tensor, got 'tensor<?x8xf32>'}}
  %0 = cell.not %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return
}
