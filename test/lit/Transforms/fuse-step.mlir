// cell-fuse-step: at batch sizes up to max-batch, prologue kernels, the GEMMs
// they feed and the epilogue become one cell.fused with the GEMM inside; other
// shapes and larger batch sizes are left alone.
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell-fuse-step{max-batch=4})' -split-input-file | FileCheck %s
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell-fuse-step{max-batch=4})' -split-input-file | cell-opt -split-input-file | FileCheck %s

// CHECK-LABEL: cell.cell @step_b4
// CHECK: %[[W:.*]] = constant dense<1.000000e+00> : tensor<3x2xf32>
// CHECK: %[[B:.*]] = constant dense<5.000000e-01> : tensor<2xf32>
// CHECK: %[[R:.*]] = fused(%arg0, %[[W]], %[[B]], %arg1) {operand_access = [#cell.access<gather>, #cell.access<broadcast>, #cell.access<broadcast>, #cell.access<gather>], result_access = [#cell.access<scatter>]} : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x3xf32>, %[[WA:.*]]: tensor<3x2xf32>, %[[BA:.*]]: tensor<2xf32>, %[[H:.*]]: tensor<4x2xf32>):
// CHECK-NEXT: %[[T:.*]] = tanh %[[X]]
// CHECK-NEXT: %[[G:.*]] = gemm %[[T]], %[[WA]], %[[BA]]
// CHECK-NEXT: %[[S:.*]] = add %[[G]], %[[H]]
// CHECK-NEXT: yield %[[S]]
// CHECK: return %[[R]]
cell.cell @step_b4(%x: tensor<4x3xf32>, %h: tensor<4x2xf32> {cell.role = #cell.role<state>}) -> (tensor<4x2xf32> {cell.role = #cell.role<state>}) attributes {cell.batch_size = 4 : i64} {
  %w = cell.constant dense<1.0> : tensor<3x2xf32>
  %b = cell.constant dense<0.5> : tensor<2xf32>
  %p = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]} : (tensor<4x3xf32>) -> tensor<4x3xf32> {
  ^bb0(%a: tensor<4x3xf32>):
    %t = cell.tanh %a : tensor<4x3xf32>
    cell.yield %t : tensor<4x3xf32>
  }
  %g = cell.gemm %p, %w, %b : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %e = cell.fused (%g, %h) {operand_access = [#cell.access<dense>, #cell.access<gather>], result_access = [#cell.access<scatter>]} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
  ^bb0(%a: tensor<4x2xf32>, %c: tensor<4x2xf32>):
    %s = cell.add %a, %c : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    cell.yield %s : tensor<4x2xf32>
  }
  cell.return %e : tensor<4x2xf32>
}

// -----

// Above max-batch the kernels and the GEMM stay.
// CHECK-LABEL: cell.cell @step_b8
// CHECK: fused
// CHECK: gemm
// CHECK: fused
cell.cell @step_b8(%x: tensor<8x3xf32>) -> tensor<8x2xf32> attributes {cell.batch_size = 8 : i64} {
  %w = cell.constant dense<1.0> : tensor<3x2xf32>
  %p = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]} : (tensor<8x3xf32>) -> tensor<8x3xf32> {
  ^bb0(%a: tensor<8x3xf32>):
    cell.yield %a : tensor<8x3xf32>
  }
  %g = cell.gemm %p, %w : (tensor<8x3xf32>, tensor<3x2xf32>) -> tensor<8x2xf32>
  %e = cell.fused (%g) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]} : (tensor<8x2xf32>) -> tensor<8x2xf32> {
  ^bb0(%a: tensor<8x2xf32>):
    %t = cell.tanh %a : tensor<8x2xf32>
    cell.yield %t : tensor<8x2xf32>
  }
  cell.return %e : tensor<8x2xf32>
}

// -----

// A second GEMM after the epilogue (a decoder's projection): left alone.
// CHECK-LABEL: cell.cell @two_levels_b2
// CHECK-COUNT-2: gemm
cell.cell @two_levels_b2(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) attributes {cell.batch_size = 2 : i64} {
  %w = cell.constant dense<1.0> : tensor<3x2xf32>
  %v = cell.constant dense<1.0> : tensor<2x2xf32>
  %p = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]} : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    cell.yield %a : tensor<2x3xf32>
  }
  %g = cell.gemm %p, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %e:2 = cell.fused (%g) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>, #cell.access<dense>]} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  ^bb0(%a: tensor<2x2xf32>):
    %t = cell.tanh %a : tensor<2x2xf32>
    cell.yield %t, %t : tensor<2x2xf32>, tensor<2x2xf32>
  }
  %q = cell.gemm %e#1, %v : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %o = cell.fused (%q) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<2x2xf32>):
    cell.yield %a : tensor<2x2xf32>
  }
  cell.return %e#0, %o : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// GEMM weights larger than max-weight-bytes (3x2 fp32 = 24 bytes here, with
// max-weight-bytes=16 in the third RUN line) keep the GEMM apart.
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell-fuse-step{max-batch=4 max-weight-bytes=16})' -split-input-file | FileCheck %s --check-prefix=BIG
// BIG-LABEL: cell.cell @step_b4
// BIG: fused
// BIG: tanh
// BIG: yield
// BIG: gemm
// BIG: fused
// BIG: add
// BIG-LABEL: cell.cell @small_weights_b4
// BIG: = fused(%arg0,
// BIG: gemm
// BIG: tanh
// BIG: yield
// BIG-NOT: fused
// BIG: return
cell.cell @small_weights_b4(%x: tensor<4x2xf32>) -> tensor<4x2xf32> attributes {cell.batch_size = 4 : i64} {
  %w = cell.constant dense<1.0> : tensor<2x2xf32>
  %p = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]} : (tensor<4x2xf32>) -> tensor<4x2xf32> {
  ^bb0(%a: tensor<4x2xf32>):
    cell.yield %a : tensor<4x2xf32>
  }
  %g = cell.gemm %p, %w : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %e = cell.fused (%g) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]} : (tensor<4x2xf32>) -> tensor<4x2xf32> {
  ^bb0(%a: tensor<4x2xf32>):
    %t = cell.tanh %a : tensor<4x2xf32>
    cell.yield %t : tensor<4x2xf32>
  }
  cell.return %e : tensor<4x2xf32>
}

// -----

// An epilogue that reduces its rows (a layer norm after the GEMM) would
// compute the GEMM's dot products once per pass over the row: the step keeps
// its GEMM.
// CHECK-LABEL: cell.cell @norm_b2
// CHECK: %[[G:.*]] = gemm
// CHECK: fused(%[[G]])
// CHECK: reduce_mean
cell.cell @norm_b2(%x: tensor<2x3xf32>) -> tensor<2x2xf32> attributes {cell.batch_size = 2 : i64} {
  %w = cell.constant dense<1.0> : tensor<3x2xf32>
  %p = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]} : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    cell.yield %a : tensor<2x3xf32>
  }
  %g = cell.gemm %p, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %e = cell.fused (%g) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<2x2xf32>):
    %m = cell.reduce_mean %a {axes = array<i64: 1>} : (tensor<2x2xf32>) -> tensor<2x1xf32>
    %d = cell.sub %a, %m : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
    cell.yield %d : tensor<2x2xf32>
  }
  cell.return %e : tensor<2x2xf32>
}

// -----

// A norm before the GEMM (a prologue that reduces rows) keeps the GEMM too.
// CHECK-LABEL: cell.cell @norm_first_b2
// CHECK: %[[P:.*]] = fused(%arg0)
// CHECK: reduce_mean
// CHECK: yield
// CHECK: %[[G:.*]] = gemm %[[P]]
// CHECK: fused(%[[G]])
cell.cell @norm_first_b2(%x: tensor<2x3xf32>) -> tensor<2x2xf32> attributes {cell.batch_size = 2 : i64} {
  %w = cell.constant dense<1.0> : tensor<3x2xf32>
  %p = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]} : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %m = cell.reduce_mean %a {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
    %d = cell.sub %a, %m : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
    cell.yield %d : tensor<2x3xf32>
  }
  %g = cell.gemm %p, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %e = cell.fused (%g) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<2x2xf32>):
    %t = cell.tanh %a : tensor<2x2xf32>
    cell.yield %t : tensor<2x2xf32>
  }
  cell.return %e : tensor<2x2xf32>
}
