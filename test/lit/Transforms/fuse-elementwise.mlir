// cell-fuse-elementwise: the ops between GEMMs become cell.fused kernels with
// gather (cell argument), dense (workspace), broadcast (weight) operands and
// scatter (returned) / dense (read by a GEMM) results.
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-fuse-elementwise))' -split-input-file | FileCheck %s
// RUN: cell-opt %s --pass-pipeline='builtin.module(cell.cell(cell-fuse-elementwise))' -split-input-file | cell-opt -split-input-file | FileCheck %s

// A GEMM cannot read the argument's rows by index: a kernel gathers them.
// An LSTM-like epilogue: split, activations and state arithmetic are one
// kernel reading the GEMM output densely and the state by row index; h is
// both returned (scatter) and projected by a GEMM (dense), so it is written
// twice; the bias-free projection's argmax is a kernel of its own.
// CHECK-LABEL: cell.cell @epilogue
// CHECK: %[[X:.*]] = fused(%arg0) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]}
// CHECK-NEXT: ^bb0(%[[XA:.*]]: tensor<?x3xf32>):
// CHECK-NEXT: %[[XI:.*]] = identity %[[XA]]
// CHECK-NEXT: yield %[[XI]]
// CHECK: %[[G:.*]] = gemm %[[X]], %{{.*}} :
// CHECK: %[[F:.*]]:3 = fused(%[[G]], %arg1) {operand_access = [#cell.access<dense>, #cell.access<gather>], result_access = [#cell.access<scatter>, #cell.access<scatter>, #cell.access<dense>]} : (tensor<?x4xf32>, tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<?x4xf32>, %[[C:.*]]: tensor<?x2xf32>):
// CHECK-NEXT: %[[S:.*]]:2 = split %[[A]]
// CHECK-NEXT: sigmoid %[[S]]#0
// CHECK-NEXT: tanh %[[S]]#1
// CHECK: yield
// CHECK: %[[P:.*]] = gemm %[[F]]#2, %{{.*}} :
// CHECK: %[[T:.*]] = fused(%[[P]]) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]}
// CHECK: argmax
// CHECK: return %[[F]]#0, %[[F]]#1, %[[T]]
cell.cell @epilogue(%x: tensor<?x3xf32>, %c: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xi64>) {
  %w = cell.constant dense<1.0> : tensor<3x4xf32>
  %wp = cell.constant dense<1.0> : tensor<2x5xf32>
  %g = cell.gemm %x, %w : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  %p:2 = cell.split %g {axis = 1 : i64, sizes = array<i64: 2, 2>} : (tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>)
  %i = cell.sigmoid %p#0 : tensor<?x2xf32>
  %u = cell.tanh %p#1 : tensor<?x2xf32>
  %c1 = cell.mul %i, %c : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %c2 = cell.add %c1, %u : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %h = cell.tanh %c2 : tensor<?x2xf32>
  %l = cell.gemm %h, %wp : (tensor<?x2xf32>, tensor<2x5xf32>) -> tensor<?x5xf32>
  %t = cell.argmax %l {axis = 1 : i64, keepdims = false} : (tensor<?x5xf32>) -> tensor<?xi64>
  cell.return %c2, %h, %t : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xi64>
}

// -----

// A prologue: the embedding lookup (weight broadcast, token gathered) and the
// concatenation with the state build the GEMM's operand in one kernel; a small
// constant is copied into the body instead of being an operand.
// CHECK-LABEL: cell.cell @prologue
// CHECK: %[[E:.*]] = constant dense_resource<table> : tensor<5x2xf32>
// CHECK: %[[F:.*]] = fused(%[[E]], %arg0, %arg1) {operand_access = [#cell.access<broadcast>, #cell.access<gather>, #cell.access<gather>], result_access = [#cell.access<dense>]}
// CHECK: constant dense<2.000000e+00> : tensor<2xf32>
// CHECK: gather
// CHECK: mul
// CHECK: concat
// CHECK: yield
// CHECK: gemm %[[F]], %{{.*}} :
cell.cell @prologue(%token: tensor<?xi64>, %h: tensor<?x2xf32>) -> tensor<?x3xf32> {
  %table = cell.constant dense_resource<table> : tensor<5x2xf32>
  %two = cell.constant dense<2.0> : tensor<2xf32>
  %w = cell.constant dense<1.0> : tensor<4x3xf32>
  %e = cell.gather %table, %token : (tensor<5x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
  %s = cell.mul %e, %two : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %xh = cell.concat %s, %h {axis = 1 : i64} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x4xf32>
  %g = cell.gemm %xh, %w : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
  cell.return %g : tensor<?x3xf32>
}
{-#
  dialect_resources: {
    builtin: {
      table: "0x040000000000803F000000400000404000008040000080400000A0400000C0400000E04000000041000010410000204100003041"
    }
  }
#-}

// -----

// a feeds a GEMM and, directly, an op that also reads the GEMM: a and b are
// on different sides of the GEMM and go to different kernels (one kernel
// would have to wait for a GEMM that waits for it).
// CHECK-LABEL: cell.cell @no_cycle
// CHECK: %[[A:.*]] = fused(%arg0) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]}
// CHECK-NOT: gemm
// CHECK: sigmoid
// CHECK: %[[G:.*]] = gemm %[[A]], %{{.*}} :
// CHECK: fused(%[[A]], %[[G]]) {operand_access = [#cell.access<dense>, #cell.access<dense>], result_access = [#cell.access<scatter>]}
// CHECK: add
cell.cell @no_cycle(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = cell.constant dense<1.0> : tensor<2x2xf32>
  %a = cell.sigmoid %x : tensor<?x2xf32>
  %g = cell.gemm %a, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %b = cell.add %a, %g : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  cell.return %b : tensor<?x2xf32>
}

// -----

// Every output gets a scatter result of its own: a GEMM result returned
// directly, a state passed through, and a value returned twice.
// CHECK-LABEL: cell.cell @outputs
// CHECK: %[[G:.*]] = gemm
// CHECK: %[[B:.*]] = fused(%[[G]]) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]}
// CHECK: %[[H1:.*]] = fused(%arg1) {operand_access = [#cell.access<gather>], result_access = [#cell.access<scatter>]}
// CHECK: %[[H2:.*]] = fused(%arg1) {operand_access = [#cell.access<gather>], result_access = [#cell.access<scatter>]}
// CHECK: return %[[B]], %[[H1]], %[[H2]]
cell.cell @outputs(%x: tensor<?x2xf32>, %h: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = cell.constant dense<1.0> : tensor<2x2xf32>
  %g = cell.gemm %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  cell.return %g, %h, %h : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// A reduction over a row's columns joins the element-wise ops around it:
// layer norm's two means, the centring, the square root and the division
// are one kernel (a block a row runs it in phases).
// CHECK-LABEL: cell.cell @layer_norm
// CHECK: %[[Y:.*]] = fused(%arg0) {operand_access = [#cell.access<gather>], result_access = [#cell.access<scatter>]}
// CHECK-NEXT: ^bb0(%[[X0:.*]]: tensor<?x4xf32>):
// CHECK-NEXT: constant
// CHECK-NEXT: %[[M:.*]] = reduce_mean %[[X0]]
// CHECK-NEXT: %[[D:.*]] = sub %[[X0]], %[[M]]
// CHECK-NEXT: %[[S:.*]] = mul %[[D]], %[[D]]
// CHECK-NEXT: %[[V:.*]] = reduce_mean %[[S]]
// CHECK-NEXT: add %[[V]]
// CHECK-NEXT: sqrt
// CHECK-NEXT: div %[[D]]
// CHECK-NEXT: yield
// CHECK-NOT: fused
// CHECK: return %[[Y]]
cell.cell @layer_norm(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %eps = cell.constant dense<1.0e-5> : tensor<f32>
  %mean = cell.reduce_mean %x {axes = array<i64: 1>} : (tensor<?x4xf32>) -> tensor<?x1xf32>
  %d = cell.sub %x, %mean : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %sq = cell.mul %d, %d : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %var = cell.reduce_mean %sq {axes = array<i64: 1>} : (tensor<?x4xf32>) -> tensor<?x1xf32>
  %shifted = cell.add %var, %eps : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
  %dev = cell.sqrt %shifted : tensor<?x1xf32>
  %y = cell.div %d, %dev : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  cell.return %y : tensor<?x4xf32>
}

// -----

// Attention's softmax between two per-row matrix products: each product is
// a kernel of its own and ends a level; the mask, the max, the exps, their
// sum and the division between them are one kernel.
// CHECK-LABEL: cell.cell @softmax_between_row_matmuls
// CHECK: %[[SCORES:.*]] = fused(%arg0, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: row_matmul
// CHECK-NEXT: yield
// CHECK: %[[WEIGHTS:.*]] = fused(%arg2, %[[SCORES]])
// CHECK-NEXT: ^bb0
// CHECK: equal
// CHECK-NEXT: where
// CHECK-NEXT: reduce_max
// CHECK-NEXT: sub
// CHECK-NEXT: exp
// CHECK-NEXT: reduce_sum
// CHECK-NEXT: div
// CHECK-NEXT: yield
// CHECK: %[[CONTEXT:.*]] = fused(%[[WEIGHTS]], %arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: row_matmul
// CHECK-NEXT: yield
// CHECK: return %[[CONTEXT]]
cell.cell @softmax_between_row_matmuls(%memory: tensor<?x3x4xf32>, %query: tensor<?x4xf32>, %mask: tensor<?x3xf32>) -> tensor<?x4xf32> {
  %zero = cell.constant dense<0.0> : tensor<f32>
  %least = cell.constant dense<0xFF800000> : tensor<f32>
  %scores = cell.row_matmul %memory, %query {m = 3 : i64, k = 4 : i64, n = 1 : i64, trans_lhs = false, trans_rhs = false} : (tensor<?x3x4xf32>, tensor<?x4xf32>) -> tensor<?x3xf32>
  %off = cell.equal %mask, %zero : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x3xi1>
  %masked = cell.where %off, %least, %scores : (tensor<?x3xi1>, tensor<f32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %max = cell.reduce_max %masked {axes = array<i64: 1>} : (tensor<?x3xf32>) -> tensor<?x1xf32>
  %shifted = cell.sub %masked, %max : (tensor<?x3xf32>, tensor<?x1xf32>) -> tensor<?x3xf32>
  %exps = cell.exp %shifted : tensor<?x3xf32>
  %sum = cell.reduce_sum %exps {axes = array<i64: 1>} : (tensor<?x3xf32>) -> tensor<?x1xf32>
  %weights = cell.div %exps, %sum : (tensor<?x3xf32>, tensor<?x1xf32>) -> tensor<?x3xf32>
  %context = cell.row_matmul %weights, %memory {m = 1 : i64, k = 3 : i64, n = 4 : i64, trans_lhs = false, trans_rhs = false} : (tensor<?x3xf32>, tensor<?x3x4xf32>) -> tensor<?x4xf32>
  cell.return %context : tensor<?x4xf32>
}

// -----

// An argmax is a kernel of its own: the log-softmax it reads is one kernel
// (its reductions among its element-wise ops), the argmax another.
// CHECK-LABEL: cell.cell @argmax_of_log_softmax
// CHECK: %[[LOGP:.*]]:2 = fused(%arg0) {{.*}} result_access = [#cell.access<scatter>, #cell.access<dense>]
// CHECK: reduce_max
// CHECK: reduce_sum
// CHECK: log
// CHECK-NOT: argmax
// CHECK: yield
// CHECK: %[[TOKEN:.*]] = fused(%[[LOGP]]#1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: argmax
// CHECK-NEXT: yield
cell.cell @argmax_of_log_softmax(%x: tensor<?x5xf32>) -> (tensor<?x5xf32>, tensor<?xi64>) {
  %max = cell.reduce_max %x {axes = array<i64: 1>} : (tensor<?x5xf32>) -> tensor<?x1xf32>
  %shifted = cell.sub %x, %max : (tensor<?x5xf32>, tensor<?x1xf32>) -> tensor<?x5xf32>
  %exps = cell.exp %shifted : tensor<?x5xf32>
  %sum = cell.reduce_sum %exps {axes = array<i64: 1>} : (tensor<?x5xf32>) -> tensor<?x1xf32>
  %logsum = cell.log %sum : tensor<?x1xf32>
  %logp = cell.sub %shifted, %logsum : (tensor<?x5xf32>, tensor<?x1xf32>) -> tensor<?x5xf32>
  %token = cell.argmax %logp {axis = 1 : i64, keepdims = false} : (tensor<?x5xf32>) -> tensor<?xi64>
  cell.return %logp, %token : tensor<?x5xf32>, tensor<?xi64>
}
