// cell.fused / cell.yield: round trip, and the verifier's checks of access
// kinds and body signature.
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/valid.mlir > %t.1 && cell-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir

// CHECK-LABEL: cell.cell @f
// CHECK: %[[R:.*]]:2 = fused(%{{.*}}, %h, %{{.*}}) {operand_access = [#cell.access<dense>, #cell.access<gather>, #cell.access<broadcast>], result_access = [#cell.access<scatter>, #cell.access<dense>]} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<?x8xf32>, %[[B:.*]]: tensor<?x4xf32>, %[[C:.*]]: tensor<4xf32>):
// CHECK-NEXT: %[[S:.*]]:2 = split %[[A]] {axis = 1 : i64, sizes = array<i64: 4, 4>}
// CHECK-NEXT: %[[M:.*]] = mul %[[S]]#0, %[[B]]
// CHECK-NEXT: %[[N:.*]] = add %[[M]], %[[C]]
// CHECK-NEXT: yield %[[N]], %[[M]] : tensor<?x4xf32>, tensor<?x4xf32>
// CHECK: return %[[R]]#0
cell.cell @f(%x: tensor<?x8xf32> {cell.name = "x"}, %h: tensor<?x4xf32> {cell.name = "h"}) -> tensor<?x4xf32> {
  %w = cell.constant dense<1.0> : tensor<8x8xf32>
  %b = cell.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %g = cell.gemm %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %r:2 = cell.fused (%g, %h, %b) {operand_access = [#cell.access<dense>, #cell.access<gather>, #cell.access<broadcast>], result_access = [#cell.access<scatter>, #cell.access<dense>]} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  ^bb0(%a: tensor<?x8xf32>, %s: tensor<?x4xf32>, %c: tensor<4xf32>):
    %p:2 = cell.split %a {axis = 1 : i64, sizes = array<i64: 4, 4>} : (tensor<?x8xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
    %m = cell.mul %p#0, %s : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %n = cell.add %m, %c : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    cell.yield %n, %m : tensor<?x4xf32>, tensor<?x4xf32>
  }
  cell.return %r#0 : tensor<?x4xf32>
}

//--- invalid.mlir

// One access kind per operand.
cell.cell @count(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'cell.fused' op has 1 operands but 2 operand access kinds}}
  %r = cell.fused (%x) {operand_access = [#cell.access<gather>, #cell.access<dense>], result_access = [#cell.access<scatter>]} : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%a: tensor<?x4xf32>):
    cell.yield %a : tensor<?x4xf32>
  }
  cell.return %r : tensor<?x4xf32>
}

// -----

// A result is never gathered.
cell.cell @result_kind(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'cell.fused' op result #0 has an access kind that does not apply to a result: #cell.access<gather>}}
  %r = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<gather>]} : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%a: tensor<?x4xf32>):
    cell.yield %a : tensor<?x4xf32>
  }
  cell.return %r : tensor<?x4xf32>
}

// -----

// Only tensors without a batch dimension are broadcast.
cell.cell @broadcast_batch(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'cell.fused' op operand #0 has a batch dimension and cannot be broadcast}}
  %r = cell.fused (%x) {operand_access = [#cell.access<broadcast>], result_access = [#cell.access<scatter>]} : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%a: tensor<?x4xf32>):
    cell.yield %a : tensor<?x4xf32>
  }
  cell.return %r : tensor<?x4xf32>
}

// -----

// The body yields the results' types.
cell.cell @yield_type(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'cell.fused' op yields values whose types differ from its results}}
  %r = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<scatter>]} : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%a: tensor<?x4xf32>):
    %p:2 = cell.split %a {axis = 1 : i64, sizes = array<i64: 2, 2>} : (tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>)
    cell.yield %p#0 : tensor<?x2xf32>
  }
  cell.return %r : tensor<?x4xf32>
}

// -----

// The body's arguments have the operands' types.
cell.cell @arg_type(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'cell.fused' op block argument #0 does not have the type of its operand}}
  %r = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<scatter>]} : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%a: tensor<?x2xf32>):
    %c = cell.concat %a, %a {axis = 1 : i64} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x4xf32>
    cell.yield %c : tensor<?x4xf32>
  }
  cell.return %r : tensor<?x4xf32>
}
