// Shape ops: concat, split, slice, gather, argmax, squeeze, unsqueeze, reshape,
// transpose, and constants (inline dense and dense_resource blobs).
//
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/valid.mlir > %t.1 && cell-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir

// CHECK-LABEL: cell.cell @concat_split(
cell.cell @concat_split(%x: tensor<?x8xf32> {cell.name = "x"}, %y: tensor<?x4xf32> {cell.name = "y"})
    -> (tensor<?x3xf32>, tensor<?x9xf32>, tensor<?x0xf32>, tensor<?x20xf32>, tensor<?x2x8xf32>) {
  // CHECK-DAG: %[[C:[0-9]+]] = constant dense<1.000000e+00> : tensor<1x8xf32>
  %c = cell.constant dense<1.0> : tensor<1x8xf32>
  // Concatenation along a static axis adds the sizes.
  // CHECK: %[[XY:[0-9]+]] = concat %x, %y {axis = 1 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x12xf32>
  %0 = cell.concat %x, %y {axis = 1 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x12xf32>
  // Any number of inputs.
  // CHECK-NEXT: %[[XYX:[0-9]+]] = concat %x, %y, %x {axis = 1 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x8xf32>) -> tensor<?x20xf32>
  %1 = cell.concat %x, %y, %x {axis = 1 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x8xf32>) -> tensor<?x20xf32>
  // Static tensors concatenate along axis 0.
  // CHECK-NEXT: %[[CC:[0-9]+]] = concat %[[C]], %[[C]] {axis = 0 : i64} : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %2 = cell.concat %c, %c {axis = 0 : i64} : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  // Split into uneven pieces, including an empty one.
  // CHECK-NEXT: %[[P:[0-9]+]]:3 = split %[[XY]] {axis = 1 : i64, sizes = array<i64: 3, 9, 0>} : (tensor<?x12xf32>) -> (tensor<?x3xf32>, tensor<?x9xf32>, tensor<?x0xf32>)
  %3:3 = cell.split %0 {axis = 1 : i64, sizes = array<i64: 3, 9, 0>} : (tensor<?x12xf32>) -> (tensor<?x3xf32>, tensor<?x9xf32>, tensor<?x0xf32>)
  // A single piece.
  // CHECK-NEXT: %[[Q:[0-9]+]] = split %[[XYX]] {axis = 1 : i64, sizes = array<i64: 20>} : (tensor<?x20xf32>) -> tensor<?x20xf32>
  %4 = cell.split %1 {axis = 1 : i64, sizes = array<i64: 20>} : (tensor<?x20xf32>) -> tensor<?x20xf32>
  // A rank-3 result: concatenation along axis 1 of [B,1,8] pieces.
  // CHECK-NEXT: %[[U:[0-9]+]] = unsqueeze %x {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1x8xf32>
  // CHECK-NEXT: %[[UU:[0-9]+]] = concat %[[U]], %[[U]] {axis = 1 : i64} : (tensor<?x1x8xf32>, tensor<?x1x8xf32>) -> tensor<?x2x8xf32>
  %5 = cell.unsqueeze %x {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1x8xf32>
  %6 = cell.concat %5, %5 {axis = 1 : i64} : (tensor<?x1x8xf32>, tensor<?x1x8xf32>) -> tensor<?x2x8xf32>
  // CHECK: return %[[P]]#0, %[[P]]#1, %[[P]]#2, %[[Q]], %[[UU]] :
  cell.return %3#0, %3#1, %3#2, %4, %6 : tensor<?x3xf32>, tensor<?x9xf32>, tensor<?x0xf32>, tensor<?x20xf32>, tensor<?x2x8xf32>
}

// CHECK-LABEL: cell.cell @slice(
cell.cell @slice(%x: tensor<?x8x6xf32> {cell.name = "x"})
    -> (tensor<?x3x6xf32>, tensor<?x4x2xf32>, tensor<?x0x6xf32>, tensor<?x8x6xf32>) {
  // A strided slice: [1, 8) step 3 has 3 elements.
  // CHECK-NEXT: %[[S0:[0-9]+]] = slice %x {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 1>, steps = array<i64: 3>} : (tensor<?x8x6xf32>) -> tensor<?x3x6xf32>
  %0 = cell.slice %x {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 8>, steps = array<i64: 3>} : (tensor<?x8x6xf32>) -> tensor<?x3x6xf32>
  // Two axes at once, listed in any order.
  // CHECK-NEXT: %[[S1:[0-9]+]] = slice %x {axes = array<i64: 2, 1>, ends = array<i64: 6, 4>, starts = array<i64: 4, 0>, steps = array<i64: 1, 1>} : (tensor<?x8x6xf32>) -> tensor<?x4x2xf32>
  %1 = cell.slice %x {axes = array<i64: 2, 1>, starts = array<i64: 4, 0>, ends = array<i64: 6, 4>, steps = array<i64: 1, 1>} : (tensor<?x8x6xf32>) -> tensor<?x4x2xf32>
  // An empty slice at the end.
  // CHECK-NEXT: %[[S2:[0-9]+]] = slice %x {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<?x8x6xf32>) -> tensor<?x0x6xf32>
  %2 = cell.slice %x {axes = array<i64: 1>, starts = array<i64: 8>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<?x8x6xf32>) -> tensor<?x0x6xf32>
  // No axes at all: the input type.
  // CHECK-NEXT: %[[S3:[0-9]+]] = slice %x {axes = array<i64>, ends = array<i64>, starts = array<i64>, steps = array<i64>} : (tensor<?x8x6xf32>) -> tensor<?x8x6xf32>
  %3 = cell.slice %x {axes = array<i64>, starts = array<i64>, ends = array<i64>, steps = array<i64>} : (tensor<?x8x6xf32>) -> tensor<?x8x6xf32>
  // CHECK-NEXT: return %[[S0]], %[[S1]], %[[S2]], %[[S3]] :
  cell.return %0, %1, %2, %3 : tensor<?x3x6xf32>, tensor<?x4x2xf32>, tensor<?x0x6xf32>, tensor<?x8x6xf32>
}

// CHECK-LABEL: cell.cell @gather_argmax(
cell.cell @gather_argmax(%tok: tensor<?xi64> {cell.name = "tok"}, %idx: tensor<?x2xi32> {cell.name = "idx"},
                         %x: tensor<?x8xf32> {cell.name = "x"})
    -> (tensor<?x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<?x1xi64>, tensor<?xi64>) {
  // CHECK-DAG: %[[EMB:[0-9]+]] = constant dense_resource<embedding> : tensor<3x4xf32>
  // CHECK-DAG: %[[COLS:[0-9]+]] = constant dense<[7, 0]> : tensor<2xi64>
  %emb = cell.constant dense_resource<embedding> : tensor<3x4xf32>
  %cols = cell.constant dense<[7, 0]> : tensor<2xi64>
  // An embedding lookup; the default axis 0 is not printed.
  // CHECK: %[[G0:[0-9]+]] = gather %[[EMB]], %tok : (tensor<3x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  %0 = cell.gather %emb, %tok {axis = 0 : i64} : (tensor<3x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  // i32 indices of rank 2: the indices' shape replaces the gathered axis.
  // CHECK-NEXT: %[[G1:[0-9]+]] = gather %[[EMB]], %idx : (tensor<3x4xf32>, tensor<?x2xi32>) -> tensor<?x2x4xf32>
  %1 = cell.gather %emb, %idx : (tensor<3x4xf32>, tensor<?x2xi32>) -> tensor<?x2x4xf32>
  // Gathering columns of a batch of rows (axis 1).
  // CHECK-NEXT: %[[G2:[0-9]+]] = gather %x, %[[COLS]] {axis = 1 : i64} : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  %2 = cell.gather %x, %cols {axis = 1 : i64} : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  // argmax keeps the reduced axis by default; the result is i64.
  // CHECK-NEXT: %[[A0:[0-9]+]] = argmax %x {axis = 1 : i64} : (tensor<?x8xf32>) -> tensor<?x1xi64>
  %3 = cell.argmax %x {axis = 1 : i64, keepdims = true, select_last_index = false} : (tensor<?x8xf32>) -> tensor<?x1xi64>
  // keepdims = false drops it; select_last_index is kept.
  // CHECK-NEXT: %[[A1:[0-9]+]] = argmax %x {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<?x8xf32>) -> tensor<?xi64>
  %4 = cell.argmax %x {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<?x8xf32>) -> tensor<?xi64>
  // CHECK-NEXT: return %[[G0]], %[[G1]], %[[G2]], %[[A0]], %[[A1]] :
  cell.return %0, %1, %2, %3, %4 : tensor<?x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<?x1xi64>, tensor<?xi64>
}

// CHECK-LABEL: cell.cell @squeeze_reshape_transpose(
cell.cell @squeeze_reshape_transpose(%x: tensor<?x1x8x1xf32> {cell.name = "x"})
    -> (tensor<?x8xf32>, tensor<?x1x8x1xf32>, tensor<?x2x4xf32>, tensor<?x4x2xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // Squeeze two size-1 axes (in any order).
  // CHECK-NEXT: %[[SQ:[0-9]+]] = squeeze %x {axes = array<i64: 3, 1>} : (tensor<?x1x8x1xf32>) -> tensor<?x8xf32>
  %0 = cell.squeeze %x {axes = array<i64: 3, 1>} : (tensor<?x1x8x1xf32>) -> tensor<?x8xf32>
  // Unsqueeze inserts 1s at the result's axes.
  // CHECK-NEXT: %[[UN:[0-9]+]] = unsqueeze %[[SQ]] {axes = array<i64: 1, 3>} : (tensor<?x8xf32>) -> tensor<?x1x8x1xf32>
  %1 = cell.unsqueeze %0 {axes = array<i64: 1, 3>} : (tensor<?x8xf32>) -> tensor<?x1x8x1xf32>
  // Reshape within a batch row.
  // CHECK-NEXT: %[[R:[0-9]+]] = reshape %[[SQ]] : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %2 = cell.reshape %0 : tensor<?x8xf32> -> tensor<?x2x4xf32>
  // Transpose of the non-batch axes.
  // CHECK-NEXT: %[[T:[0-9]+]] = transpose %[[R]] {perm = array<i64: 0, 2, 1>} : (tensor<?x2x4xf32>) -> tensor<?x4x2xf32>
  %3 = cell.transpose %2 {perm = array<i64: 0, 2, 1>} : (tensor<?x2x4xf32>) -> tensor<?x4x2xf32>
  // The batch may move (transpose, reshape) as long as it stays one dynamic dimension.
  // CHECK-NEXT: %[[M:[0-9]+]] = transpose %[[R]] {perm = array<i64: 1, 0, 2>} : (tensor<?x2x4xf32>) -> tensor<2x?x4xf32>
  // CHECK-NEXT: %[[MR:[0-9]+]] = reshape %[[M]] : tensor<2x?x4xf32> -> tensor<?x8xf32>
  %4 = cell.transpose %2 {perm = array<i64: 1, 0, 2>} : (tensor<?x2x4xf32>) -> tensor<2x?x4xf32>
  %5 = cell.reshape %4 : tensor<2x?x4xf32> -> tensor<?x8xf32>
  // A reshape to the same type is valid (it folds away under -canonicalize).
  // CHECK-NEXT: %[[SAME:[0-9]+]] = reshape %[[SQ]] : tensor<?x8xf32> -> tensor<?x8xf32>
  %6 = cell.reshape %0 : tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK-NEXT: return %[[SQ]], %[[UN]], %[[R]], %[[T]], %[[MR]], %[[SAME]] :
  cell.return %0, %1, %2, %3, %5, %6 : tensor<?x8xf32>, tensor<?x1x8x1xf32>, tensor<?x2x4xf32>, tensor<?x4x2xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// Inline constants (splat, non-splat, integer, rank 0) and a dense_resource blob.
// CHECK-LABEL: cell.cell @constants(
// CHECK-NEXT: %[[K0:[0-9]+]] = constant dense<5.000000e-01> : tensor<2x3xf32>
// CHECK-NEXT: %[[K1:[0-9]+]] = constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT: %[[K2:[0-9]+]] = constant dense<[1, -2, 3]> : tensor<3xi32>
// CHECK-NEXT: %[[K3:[0-9]+]] = constant dense<true> : tensor<i1>
// CHECK-NEXT: %[[K4:[0-9]+]] = constant dense_resource<weights> : tensor<2x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = add %arg0, %[[K0]] : (tensor<?x2x3xf32>, tensor<2x3xf32>) -> tensor<?x2x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = add %arg0, %[[K1]] : (tensor<?x2x3xf32>, tensor<2x3xf32>) -> tensor<?x2x3xf32>
// CHECK-NEXT: %{{[0-9]+}} = add %arg0, %[[K4]] : (tensor<?x2x3xf32>, tensor<2x3xf32>) -> tensor<?x2x3xf32>
cell.cell @constants(%x: tensor<?x2x3xf32>) -> (tensor<?x2x3xf32>, tensor<?x2x3xf32>, tensor<?x2x3xf32>) {
  %0 = cell.constant dense<0.5> : tensor<2x3xf32>
  %1 = cell.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %2 = cell.constant dense<[1, -2, 3]> : tensor<3xi32>
  %3 = cell.constant dense<true> : tensor<i1>
  %4 = cell.constant dense_resource<weights> : tensor<2x3xf32>
  %5 = cell.add %x, %0 : (tensor<?x2x3xf32>, tensor<2x3xf32>) -> tensor<?x2x3xf32>
  %6 = cell.add %x, %1 : (tensor<?x2x3xf32>, tensor<2x3xf32>) -> tensor<?x2x3xf32>
  %7 = cell.add %x, %4 : (tensor<?x2x3xf32>, tensor<2x3xf32>) -> tensor<?x2x3xf32>
  cell.return %5, %6, %7 : tensor<?x2x3xf32>, tensor<?x2x3xf32>, tensor<?x2x3xf32>
}

// The blobs round-trip in the resource section (4-byte alignment, then the
// little-endian data).
// CHECK-LABEL: {-#
// CHECK-NEXT: dialect_resources: {
// CHECK-NEXT: builtin: {
// CHECK-DAG: embedding: "0x040000000000803F000000400000404000008040000080BF000000C0000040C0000080C00000003F0000803F0000C03F00000040"
// CHECK-DAG: weights: "0x04000000000000000000803F0000004000004040000080400000A040"
{-#
  dialect_resources: {
    builtin: {
      embedding: "0x040000000000803F000000400000404000008040000080BF000000C0000040C0000080C00000003F0000803F0000C03F00000040",
      weights: "0x04000000000000000000803F0000004000004040000080400000A040"
    }
  }
#-}

//--- invalid.mlir

// concat: the axis must be within the rank.
cell.cell @concat_axis(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = cell.concat %x, %x {axis = 2 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// concat: all inputs have the same rank.
cell.cell @concat_rank(%x: tensor<?x8xf32>, %y: tensor<?x4x2xf32>) {
  // expected-error @+1 {{all inputs must have rank 2}}
  %0 = cell.concat %x, %y {axis = 1 : i64} : (tensor<?x8xf32>, tensor<?x4x2xf32>) -> tensor<?x16xf32>
  cell.return
}

// -----

// concat: all inputs have the same element type.
cell.cell @concat_element_type(%x: tensor<?x8xf32>, %y: tensor<?x8xf16>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = cell.concat %x, %y {axis = 1 : i64} : (tensor<?x8xf32>, tensor<?x8xf16>) -> tensor<?x16xf32>
  cell.return
}

// -----

// concat: dimensions other than the axis agree.
cell.cell @concat_other_dims(%x: tensor<?x2x8xf32>, %y: tensor<?x3x8xf32>) {
  // expected-error @+1 {{inputs differ in dimension 1 (other than the axis 2)}}
  %0 = cell.concat %x, %y {axis = 2 : i64} : (tensor<?x2x8xf32>, tensor<?x3x8xf32>) -> tensor<?x2x16xf32>
  cell.return
}

// -----

// concat: a static tensor cannot stand in for the batch in another dimension.
cell.cell @concat_static_vs_batch(%x: tensor<?x8xf32>) {
  %c = cell.constant dense<1.0> : tensor<1x4xf32>
  // expected-error @+1 {{inputs differ in dimension 0 (other than the axis 1)}}
  %0 = cell.concat %x, %c {axis = 1 : i64} : (tensor<?x8xf32>, tensor<1x4xf32>) -> tensor<?x12xf32>
  cell.return
}

// -----

// concat: at least one input.
cell.cell @concat_empty(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{needs at least one input}}
  %0 = cell.concat {axis = 0 : i64} : () -> tensor<?x8xf32>
  cell.return
}

// -----

// concat: like split and slice, concat along the dynamic batch dimension is not
// supported (it would stack two batches into one, [B,8] ++ [B,8] -> [2B,8]).
cell.cell @concat_batch(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{concat along the dynamic batch dimension is not supported}}
  %0 = cell.concat %x, %x {axis = 0 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// split: the piece sizes add up to the dimension.
cell.cell @split_sizes(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{piece sizes add up to 7 but dimension 1 has size 8}}
  %0:2 = cell.split %x {axis = 1 : i64, sizes = array<i64: 3, 4>} : (tensor<?x8xf32>) -> (tensor<?x3xf32>, tensor<?x4xf32>)
  cell.return
}

// -----

// split: piece sizes are non-negative.
cell.cell @split_negative(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{piece sizes must be non-negative}}
  %0:2 = cell.split %x {axis = 1 : i64, sizes = array<i64: 10, -2>} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
  cell.return
}

// -----

// split: at least one piece.
cell.cell @split_no_pieces(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{needs at least one piece}}
  "cell.split"(%x) {axis = 1 : i64, sizes = array<i64>} : (tensor<?x8xf32>) -> ()
  cell.return
}

// -----

// split: not along the dynamic batch dimension.
cell.cell @split_batch(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{split along the dynamic batch dimension is not supported}}
  %0:2 = cell.split %x {axis = 0 : i64, sizes = array<i64: 1, 1>} : (tensor<?x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>)
  cell.return
}

// -----

// split: the axis must be within the rank.
cell.cell @split_axis(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0:2 = cell.split %x {axis = 2 : i64, sizes = array<i64: 4, 4>} : (tensor<?x8xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  cell.return
}

// -----

// split: the declared result types must be the pieces.
cell.cell @split_result(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.split' op inferred type(s) 'tensor<?x4xf32>', 'tensor<?x4xf32>' are incompatible with return type(s) of operation 'tensor<?x4xf32>', 'tensor<?x3xf32>'}}
  %0:2 = cell.split %x {axis = 1 : i64, sizes = array<i64: 4, 4>} : (tensor<?x8xf32>) -> (tensor<?x4xf32>, tensor<?x3xf32>)
  cell.return
}

// -----

// slice: not along the dynamic batch dimension.
cell.cell @slice_batch(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{slice along the dynamic batch dimension is not supported}}
  %0 = cell.slice %x {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<1x8xf32>
  cell.return
}

// -----

// slice: the end must be within the dimension.
cell.cell @slice_end(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{slice [2, 9) is not within dimension 1 of size 8}}
  %0 = cell.slice %x {axes = array<i64: 1>, starts = array<i64: 2>, ends = array<i64: 9>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x7xf32>
  cell.return
}

// -----

// slice: the start must not be negative (the importer resolves ONNX's negative starts).
cell.cell @slice_negative_start(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{slice [-1, 4) is not within dimension 1 of size 8}}
  %0 = cell.slice %x {axes = array<i64: 1>, starts = array<i64: -1>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x5xf32>
  cell.return
}

// -----

// slice: the start must not be past the end.
cell.cell @slice_reversed(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{slice [5, 3) is not within dimension 1 of size 8}}
  %0 = cell.slice %x {axes = array<i64: 1>, starts = array<i64: 5>, ends = array<i64: 3>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x0xf32>
  cell.return
}

// -----

// slice: steps are positive.
cell.cell @slice_step(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{steps must be positive}}
  %0 = cell.slice %x {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 0>} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  cell.return
}

// -----

// slice: an axis is sliced at most once.
cell.cell @slice_twice(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{axis 1 is sliced twice}}
  %0 = cell.slice %x {axes = array<i64: 1, 1>, starts = array<i64: 0, 0>, ends = array<i64: 4, 4>, steps = array<i64: 1, 1>} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  cell.return
}

// -----

// slice: axes, starts, ends and steps have one length.
cell.cell @slice_lengths(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{axes, starts, ends and steps differ in length}}
  %0 = cell.slice %x {axes = array<i64: 1>, starts = array<i64: 0, 1>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  cell.return
}

// -----

// slice: the axis must be within the rank.
cell.cell @slice_axis(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = cell.slice %x {axes = array<i64: 2>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  cell.return
}

// -----

// gather: float indices are rejected.
cell.cell @gather_float_indices(%i: tensor<?xf32>) {
  %w = cell.constant dense<1.0> : tensor<10x4xf32>
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %0 = cell.gather %w, %i : (tensor<10x4xf32>, tensor<?xf32>) -> tensor<?x4xf32>
  cell.return
}

// -----

// gather: narrow integer indices are rejected.
cell.cell @gather_i16_indices(%i: tensor<?xi16>) {
  %w = cell.constant dense<1.0> : tensor<10x4xf32>
  // expected-error @+1 {{indices must be i32 or i64, got 'i16'}}
  %0 = cell.gather %w, %i : (tensor<10x4xf32>, tensor<?xi16>) -> tensor<?x4xf32>
  cell.return
}

// -----

// gather: not along the dynamic batch dimension.
cell.cell @gather_batch(%x: tensor<?x8xf32>) {
  %i = cell.constant dense<1> : tensor<2xi64>
  // expected-error @+1 {{gather along the dynamic batch dimension is not supported}}
  %0 = cell.gather %x, %i {axis = 0 : i64} : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  cell.return
}

// -----

// gather: the axis must be within the rank.
cell.cell @gather_axis(%i: tensor<?xi32>) {
  %w = cell.constant dense<1.0> : tensor<10x4xf32>
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = cell.gather %w, %i {axis = 2 : i64} : (tensor<10x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  cell.return
}

// -----

// gather: batched indices into batched data along axis 1 would give [B, B],
// a tensor with two batch dimensions.
cell.cell @gather_two_batch_dims(%x: tensor<?x8xf32>, %i: tensor<?xi64>) {
  // expected-error @+1 {{more than one dynamic (batch) dimension}}
  %0 = cell.gather %x, %i {axis = 1 : i64} : (tensor<?x8xf32>, tensor<?xi64>) -> tensor<?x?xf32>
  cell.return
}

// -----

// argmax: not along the dynamic batch dimension.
cell.cell @argmax_batch(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{argmax along the dynamic batch dimension is not supported}}
  %0 = cell.argmax %x {axis = 0 : i64} : (tensor<?x8xf32>) -> tensor<1x8xi64>
  cell.return
}

// -----

// argmax: the axis is non-negative (the importer normalises ONNX's negative axes).
cell.cell @argmax_negative_axis(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %0 = cell.argmax %x {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x1xi64>
  cell.return
}

// -----

// argmax: the result is i64.
cell.cell @argmax_i32(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.argmax' op inferred type(s) 'tensor<?x1xi64>' are incompatible with return type(s) of operation 'tensor<?x1xi32>'}}
  %0 = cell.argmax %x {axis = 1 : i64} : (tensor<?x8xf32>) -> tensor<?x1xi32>
  cell.return
}

// -----

// squeeze: only size-1 dimensions.
cell.cell @squeeze_not_one(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{cannot squeeze dimension 1 of type 'tensor<?x8xf32>': its size is not 1}}
  %0 = cell.squeeze %x {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?xf32>
  cell.return
}

// -----

// squeeze: the batch dimension is not a size-1 dimension.
cell.cell @squeeze_batch(%x: tensor<?x1xf32>) {
  // expected-error @+1 {{cannot squeeze dimension 0 of type 'tensor<?x1xf32>': its size is not 1}}
  %0 = cell.squeeze %x {axes = array<i64: 0>} : (tensor<?x1xf32>) -> tensor<1xf32>
  cell.return
}

// -----

// squeeze: an axis is listed once.
cell.cell @squeeze_duplicate(%x: tensor<?x1x1xf32>) {
  // expected-error @+1 {{axis 1 is listed twice}}
  %0 = cell.squeeze %x {axes = array<i64: 1, 1>} : (tensor<?x1x1xf32>) -> tensor<?x1xf32>
  cell.return
}

// -----

// squeeze: the axes must be within the rank.
cell.cell @squeeze_axis(%x: tensor<?x1xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = cell.squeeze %x {axes = array<i64: 2>} : (tensor<?x1xf32>) -> tensor<?x1xf32>
  cell.return
}

// -----

// unsqueeze: an axis is listed once.
cell.cell @unsqueeze_duplicate(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{axis 1 is listed twice}}
  %0 = cell.unsqueeze %x {axes = array<i64: 1, 1>} : (tensor<?x8xf32>) -> tensor<?x1x1x8xf32>
  cell.return
}

// -----

// unsqueeze: the axes index the result, whose rank is 3 here.
cell.cell @unsqueeze_axis(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{axis 3 is out of range for rank 3}}
  %0 = cell.unsqueeze %x {axes = array<i64: 3>} : (tensor<?x8xf32>) -> tensor<?x8x1xf32>
  cell.return
}

// -----

// transpose: perm has one entry per dimension.
cell.cell @transpose_short(%x: tensor<?x2x4xf32>) {
  // expected-error @+1 {{perm must be a permutation of 0..2}}
  %0 = cell.transpose %x {perm = array<i64: 0, 1>} : (tensor<?x2x4xf32>) -> tensor<?x2xf32>
  cell.return
}

// -----

// transpose: a repeated entry is not a permutation (one diagnostic).
cell.cell @transpose_duplicate(%x: tensor<?x2x4xf32>) {
  // expected-error @+1 {{perm must be a permutation of 0..2}}
  %0 = cell.transpose %x {perm = array<i64: 0, 1, 1>} : (tensor<?x2x4xf32>) -> tensor<?x2x2xf32>
  cell.return
}

// -----

// transpose: an out-of-range entry is not a permutation (one diagnostic).
cell.cell @transpose_out_of_range(%x: tensor<?x2x4xf32>) {
  // expected-error @+1 {{perm must be a permutation of 0..2}}
  %0 = cell.transpose %x {perm = array<i64: 0, 1, 3>} : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  cell.return
}

// -----

// transpose: the declared result is the permuted shape.
cell.cell @transpose_result(%x: tensor<?x2x4xf32>) {
  // expected-error @+1 {{'cell.transpose' op inferred type(s) 'tensor<?x4x2xf32>' are incompatible with return type(s) of operation 'tensor<?x2x4xf32>'}}
  %0 = cell.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  cell.return
}

// -----

// reshape: the batch dimension cannot be dropped.
cell.cell @reshape_drop_batch(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.reshape' op cannot remove the batch dimension: 'tensor<?x8xf32>' to 'tensor<2x4xf32>'}}
  %0 = cell.reshape %x : tensor<?x8xf32> -> tensor<2x4xf32>
  cell.return
}

// -----

// reshape: a batch dimension cannot be created from static data.
cell.cell @reshape_create_batch(%x: tensor<?x8xf32>) {
  %c = cell.constant dense<1.0> : tensor<2x4xf32>
  // expected-error @+1 {{'cell.reshape' op cannot create the batch dimension: 'tensor<2x4xf32>' to 'tensor<?x8xf32>'}}
  %0 = cell.reshape %c : tensor<2x4xf32> -> tensor<?x8xf32>
  cell.return
}

// -----

// reshape: the number of elements per batch row is kept.
cell.cell @reshape_count(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.reshape' op changes the number of elements per batch row: 'tensor<?x8xf32>' to 'tensor<?x3x3xf32>'}}
  %0 = cell.reshape %x : tensor<?x8xf32> -> tensor<?x3x3xf32>
  cell.return
}

// -----

// reshape: the element count of static tensors is kept too.
cell.cell @reshape_static_count(%x: tensor<?x8xf32>) {
  %c = cell.constant dense<1.0> : tensor<2x4xf32>
  // expected-error @+1 {{'cell.reshape' op changes the number of elements per batch row: 'tensor<2x4xf32>' to 'tensor<9xf32>'}}
  %0 = cell.reshape %c : tensor<2x4xf32> -> tensor<9xf32>
  cell.return
}

// -----

// reshape: the element type is kept.
cell.cell @reshape_element_type(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.reshape' op changes the element type}}
  %0 = cell.reshape %x : tensor<?x8xf32> -> tensor<?x8xf16>
  cell.return
}

// -----

// reshape: at most one dynamic dimension.
cell.cell @reshape_two_dynamic(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.reshape' op supports at most one dynamic (batch) dimension}}
  %0 = cell.reshape %x : tensor<?x8xf32> -> tensor<?x?x4xf32>
  cell.return
}

// -----

// constant: the result type is the value's type.
cell.cell @constant_type(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "cell.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  cell.return
}

// -----

// constant: the value is an elements attribute.
cell.cell @constant_scalar(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.constant' op attribute 'value' failed to satisfy constraint: constant vector/tensor attribute}}
  %0 = "cell.constant"() {value = 1.0 : f32} : () -> tensor<f32>
  cell.return
}
