// cell-specialize-batch: one copy of the cell per batch size, with the batch
// dimension made static everywhere (arguments, results, op results, fused
// bodies); the generic cell stays.
// RUN: cell-opt %s -cell-specialize-batch -split-input-file -verify-diagnostics | FileCheck %s
// RUN: cell-opt %s -cell-specialize-batch -split-input-file -verify-diagnostics | cell-opt -split-input-file | FileCheck %s

// CHECK-LABEL: cell.cell @step(%x: tensor<?x2xf32>
// CHECK-SAME: cell.batch_sizes = array<i64: 2, 8>
// CHECK-LABEL: cell.cell @step_b2(%x: tensor<2x2xf32> {cell.name = "x", cell.role = #cell.role<input>}, %h: tensor<2x2xf32> {cell.name = "h", cell.role = #cell.role<state>}) -> (tensor<2x2xf32> {cell.name = "h2", cell.role = #cell.role<state>, cell.updates = "h"})
// CHECK-SAME: attributes {cell.batch_size = 2 : i64, cell.generic = @step, cell.priority = 3 : i64}
// CHECK: gemm %{{.*}}, %{{.*}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK: fused(%{{.*}}, %h) {{.*}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<2x2xf32>, %{{.*}}: tensor<2x2xf32>):
// CHECK-NEXT: add %{{.*}}, %{{.*}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-LABEL: cell.cell @step_b8(%x: tensor<8x2xf32>
// CHECK-SAME: cell.batch_size = 8 : i64, cell.generic = @step
// CHECK: gemm %{{.*}}, %{{.*}} : (tensor<8x2xf32>, tensor<2x2xf32>) -> tensor<8x2xf32>
cell.cell @step(%x: tensor<?x2xf32> {cell.name = "x", cell.role = #cell.role<input>}, %h: tensor<?x2xf32> {cell.name = "h", cell.role = #cell.role<state>}) -> (tensor<?x2xf32> {cell.name = "h2", cell.role = #cell.role<state>, cell.updates = "h"}) attributes {cell.batch_sizes = array<i64: 2, 8>, cell.priority = 3 : i64} {
  %w = cell.constant dense<1.0> : tensor<2x2xf32>
  %g = cell.gemm %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %r = cell.fused (%g, %h) {operand_access = [#cell.access<dense>, #cell.access<gather>], result_access = [#cell.access<scatter>]} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32> {
  ^bb0(%a: tensor<?x2xf32>, %b: tensor<?x2xf32>):
    %s = cell.add %a, %b : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    cell.yield %s : tensor<?x2xf32>
  }
  cell.return %r : tensor<?x2xf32>
}

// -----

// A copy's name must be free.
// expected-error @+1 {{'cell.cell' op a symbol named like its batch-4 copy exists already}}
cell.cell @taken(%x: tensor<?x2xf32>) -> tensor<?x2xf32> attributes {cell.batch_sizes = array<i64: 4>} {
  cell.return %x : tensor<?x2xf32>
}
cell.cell @taken_b4(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  cell.return %x : tensor<?x2xf32>
}

// -----

// A specialized cell's arguments have the batch size as leading dimension.
// expected-error @+1 {{'cell.cell' op argument #0 of a cell specialized for batch size 4 must be static with 4 leading rows, got 'tensor<3x2xf32>'}}
cell.cell @wrong_rows(%x: tensor<3x2xf32>) -> tensor<3x2xf32> attributes {cell.batch_size = 4 : i64} {
  cell.return %x : tensor<3x2xf32>
}
