// The ops of layer-normalised cells, GELU heads and masks: erf and sqrt
// (floating point), pow (floating point, broadcasting), equal (i1 result),
// where (i1 condition, broadcasting over three operands), reduce_mean (never
// over the batch; keepdims keeps a size-1 dimension).
//
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/valid.mlir > %t.1 && cell-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir

// CHECK-LABEL: cell.cell @normalize(
cell.cell @normalize(%x: tensor<?x8xf32> {cell.name = "x"}, %flag: tensor<?x1xi64> {cell.name = "flag"})
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x1xf32>, tensor<?xf32>) {
  %two = cell.constant dense<2.0> : tensor<f32>
  %one = cell.constant dense<1> : tensor<i64>
  // CHECK: %[[E:.*]] = erf %x : tensor<?x8xf32>
  %e = cell.erf %x : tensor<?x8xf32>
  // CHECK: %[[S:.*]] = sqrt %[[E]] : tensor<?x8xf32>
  %s = cell.sqrt %e : tensor<?x8xf32>
  // CHECK: %[[P:.*]] = pow %[[S]], %{{.*}} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %p = cell.pow %s, %two : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  // CHECK: %[[K:.*]] = equal %flag, %{{.*}} : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
  %keep = cell.equal %flag, %one : (tensor<?x1xi64>, tensor<i64>) -> tensor<?x1xi1>
  // CHECK: %[[W:.*]] = where %[[K]], %[[P]], %x : (tensor<?x1xi1>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %w = cell.where %keep, %p, %x : (tensor<?x1xi1>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[M:.*]] = reduce_mean %[[W]] {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  %m = cell.reduce_mean %w {axes = array<i64: 1>, keepdims = true} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  // CHECK: %[[N:.*]] = reduce_mean %[[W]] {axes = array<i64: 1>, keepdims = false} : (tensor<?x8xf32>) -> tensor<?xf32>
  %n = cell.reduce_mean %w {axes = array<i64: 1>, keepdims = false} : (tensor<?x8xf32>) -> tensor<?xf32>
  cell.return %p, %w, %m, %n : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x1xf32>, tensor<?xf32>
}

// CHECK-LABEL: cell.cell @softmax_parts(
cell.cell @softmax_parts(%x: tensor<?x8xf32> {cell.name = "x"}) -> (tensor<?x1xf32>, tensor<?x1xf32>) {
  // CHECK: %[[M:.*]] = reduce_max %x {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  %m = cell.reduce_max %x {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  // CHECK: %[[E:.*]] = exp %x : tensor<?x8xf32>
  %e = cell.exp %x : tensor<?x8xf32>
  // CHECK: %[[S:.*]] = reduce_sum %[[E]] {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  %s = cell.reduce_sum %e {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  // CHECK: %[[L:.*]] = log %[[S]] : tensor<?x1xf32>
  %l = cell.log %s : tensor<?x1xf32>
  cell.return %m, %l : tensor<?x1xf32>, tensor<?x1xf32>
}

//--- invalid.mlir

cell.cell @erf_int(%x: tensor<?x8xi64> {cell.name = "x"}) -> tensor<?x8xi64> {
  // expected-error @+1 {{'cell.erf' op expects a floating-point tensor, got 'tensor<?x8xi64>'}}
  %0 = cell.erf %x : tensor<?x8xi64>
  cell.return %0 : tensor<?x8xi64>
}

// -----

cell.cell @pow_int(%x: tensor<?x8xi64> {cell.name = "x"}) -> tensor<?x8xi64> {
  // expected-error @+1 {{Pow needs floating-point operands, got 'tensor<?x8xi64>'}}
  %0 = cell.pow %x, %x : (tensor<?x8xi64>, tensor<?x8xi64>) -> tensor<?x8xi64>
  cell.return %0 : tensor<?x8xi64>
}

// -----

cell.cell @where_float_condition(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x8xf32> {
  // expected-error @+1 {{the condition must be an i1 tensor}}
  %0 = cell.where %x, %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return %0 : tensor<?x8xf32>
}

// -----

cell.cell @reduce_batch(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x8xf32> {
  // expected-error @+1 {{cannot reduce the batch dimension}}
  %0 = cell.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : (tensor<?x8xf32>) -> tensor<1x8xf32>
  cell.return %x : tensor<?x8xf32>
}

// -----

cell.cell @reduce_axis(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x1xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = cell.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  cell.return %0 : tensor<?x1xf32>
}
