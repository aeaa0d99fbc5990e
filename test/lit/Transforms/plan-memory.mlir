// cell-plan-memory: workspace offsets for the buffers of a specialized cell.
// At batch 32, a (gather kernel) and f (between the GEMMs) are never live
// together, nor are g1 and g2, so the four 1 KB buffers fit in 2 KB: the
// peak. At batch 4 (up to 16 rows, where a GEMM and the kernel after it may
// run as one kernel) a GEMM's operand lives on through the kernel after it
// that reads its result: a through f, f through the last kernel, so f has
// bytes of its own. State results (scatter) and weights get no offset.
// RUN: cell-opt %s -cell-plan-memory | FileCheck %s

// CHECK-LABEL: cell.cell @chain_b32
// CHECK-SAME: cell.peak_bytes = 2048 : i64, cell.slot_bytes = 32 : i64, cell.workspace_bytes = 2048 : i64
// CHECK: %[[A:.*]] = fused(%x) {cell.offsets = array<i64: 0>,
// CHECK: %[[G1:.*]] = gemm %[[A]], %{{.*}} {cell.offsets = array<i64: 1024>}
// CHECK: %[[F:.*]] = fused(%[[G1]]) {cell.offsets = array<i64: 0>,
// CHECK: %[[G2:.*]] = gemm %[[F]], %{{.*}} {cell.offsets = array<i64: 1024>}
// CHECK: fused(%[[G2]]) {cell.offsets = array<i64: -1>,

// CHECK-LABEL: cell.cell @chain_b4
// CHECK-SAME: cell.peak_bytes = 768 : i64, cell.slot_bytes = 32 : i64, cell.workspace_bytes = 768 : i64
// CHECK: %[[A:.*]] = fused(%x) {cell.offsets = array<i64: 0>,
// CHECK: %[[G1:.*]] = gemm %[[A]], %{{.*}} {cell.offsets = array<i64: 256>}
// CHECK: %[[F:.*]] = fused(%[[G1]]) {cell.offsets = array<i64: 512>,
// CHECK: %[[G2:.*]] = gemm %[[F]], %{{.*}} {cell.offsets = array<i64: 0>}
// CHECK: fused(%[[G2]]) {cell.offsets = array<i64: -1>,
// The generic cell is not planned.
// CHECK-LABEL: cell.cell @chain(
// CHECK-NOT: cell.offsets
cell.cell @chain_b32(%x: tensor<32x8xf32> {cell.name = "x", cell.role = #cell.role<state>}) -> (tensor<32x8xf32> {cell.name = "y", cell.role = #cell.role<state>, cell.updates = "x"}) attributes {cell.batch_size = 32 : i64} {
  %w = cell.constant dense<1.0> : tensor<8x8xf32>
  %a = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]} : (tensor<32x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%v: tensor<32x8xf32>):
    cell.yield %v : tensor<32x8xf32>
  }
  %g1 = cell.gemm %a, %w : (tensor<32x8xf32>, tensor<8x8xf32>) -> tensor<32x8xf32>
  %f = cell.fused (%g1) {operand_access = [#cell.access<dense>], result_access = [#cell.access<dense>]} : (tensor<32x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%v: tensor<32x8xf32>):
    %t = cell.tanh %v : tensor<32x8xf32>
    cell.yield %t : tensor<32x8xf32>
  }
  %g2 = cell.gemm %f, %w : (tensor<32x8xf32>, tensor<8x8xf32>) -> tensor<32x8xf32>
  %y = cell.fused (%g2) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]} : (tensor<32x8xf32>) -> tensor<32x8xf32> {
  ^bb0(%v: tensor<32x8xf32>):
    %t = cell.sigmoid %v : tensor<32x8xf32>
    cell.yield %t : tensor<32x8xf32>
  }
  cell.return %y : tensor<32x8xf32>
}
cell.cell @chain_b4(%x: tensor<4x8xf32> {cell.name = "x", cell.role = #cell.role<state>}) -> (tensor<4x8xf32> {cell.name = "y", cell.role = #cell.role<state>, cell.updates = "x"}) attributes {cell.batch_size = 4 : i64} {
  %w = cell.constant dense<1.0> : tensor<8x8xf32>
  %a = cell.fused (%x) {operand_access = [#cell.access<gather>], result_access = [#cell.access<dense>]} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%v: tensor<4x8xf32>):
    cell.yield %v : tensor<4x8xf32>
  }
  %g1 = cell.gemm %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %f = cell.fused (%g1) {operand_access = [#cell.access<dense>], result_access = [#cell.access<dense>]} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%v: tensor<4x8xf32>):
    %t = cell.tanh %v : tensor<4x8xf32>
    cell.yield %t : tensor<4x8xf32>
  }
  %g2 = cell.gemm %f, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = cell.fused (%g2) {operand_access = [#cell.access<dense>], result_access = [#cell.access<scatter>]} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%v: tensor<4x8xf32>):
    %t = cell.sigmoid %v : tensor<4x8xf32>
    cell.yield %t : tensor<4x8xf32>
  }
  cell.return %y : tensor<4x8xf32>
}
cell.cell @chain(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %w = cell.constant dense<1.0> : tensor<8x8xf32>
  %g = cell.gemm %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  cell.return %g : tensor<?x8xf32>
}
