// Elementwise ops: add/sub/mul/div (numpy broadcasting where the dynamic batch
// dimension only meets 1 or itself), sigmoid/tanh/relu (floating point only),
// identity and cast.
//
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/valid.mlir > %t.1 && cell-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir

// CHECK-LABEL: cell.cell @binary(
// CHECK-SAME: %x: tensor<?x8xf32> {cell.name = "x"}, %y: tensor<?x1xf32> {cell.name = "y"}, %v: tensor<?x4x1xf32> {cell.name = "v"})
cell.cell @binary(%x: tensor<?x8xf32> {cell.name = "x"}, %y: tensor<?x1xf32> {cell.name = "y"},
                  %v: tensor<?x4x1xf32> {cell.name = "v"})
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>,
        tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4x8xf32>, tensor<?x8xf32>) {
  // CHECK-DAG: %[[ROW:[0-9]+]] = constant dense<1.000000e+00> : tensor<8xf32>
  // CHECK-DAG: %[[ONE_ROW:[0-9]+]] = constant dense<2.000000e+00> : tensor<1x8xf32>
  // CHECK-DAG: %[[SCALAR:[0-9]+]] = constant dense<3.000000e+00> : tensor<f32>
  %row = cell.constant dense<1.0> : tensor<8xf32>
  %one_row = cell.constant dense<2.0> : tensor<1x8xf32>
  %scalar = cell.constant dense<3.0> : tensor<f32>
  // Equal shapes, the batch meets the batch.
  // CHECK: %[[A0:[0-9]+]] = add %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %0 = cell.add %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // A lower-rank operand is padded with leading 1s.
  // CHECK-NEXT: %[[A1:[0-9]+]] = add %x, %[[ROW]] : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = cell.add %x, %row : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // Padding works for the left operand too.
  // CHECK-NEXT: %[[A2:[0-9]+]] = sub %[[ROW]], %x : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %2 = cell.sub %row, %x : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // A static 1 broadcasts against a static 8 (next to the batch).
  // CHECK-NEXT: %[[A3:[0-9]+]] = mul %x, %y : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %3 = cell.mul %x, %y : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  // The same on the left.
  // CHECK-NEXT: %[[A4:[0-9]+]] = div %y, %x : (tensor<?x1xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %4 = cell.div %y, %x : (tensor<?x1xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // The dynamic batch broadcasts against a static 1.
  // CHECK-NEXT: %[[A5:[0-9]+]] = add %[[ONE_ROW]], %x : (tensor<1x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %5 = cell.add %one_row, %x : (tensor<1x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  // Both operands broadcast in different dimensions.
  // CHECK-NEXT: %[[A6:[0-9]+]] = mul %v, %[[ROW]] : (tensor<?x4x1xf32>, tensor<8xf32>) -> tensor<?x4x8xf32>
  %6 = cell.mul %v, %row : (tensor<?x4x1xf32>, tensor<8xf32>) -> tensor<?x4x8xf32>
  // A rank-0 operand broadcasts against everything.
  // CHECK-NEXT: %[[A7:[0-9]+]] = div %x, %[[SCALAR]] : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %7 = cell.div %x, %scalar : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  // CHECK-NEXT: return %[[A0]], %[[A1]], %[[A2]], %[[A3]], %[[A4]], %[[A5]], %[[A6]], %[[A7]] :
  cell.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>,
                                               tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4x8xf32>, tensor<?x8xf32>
}

// Integer operands are allowed for the arithmetic ops.
// CHECK-LABEL: cell.cell @integer(
// CHECK: add %arg0, %arg0 : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
// CHECK: div %{{[0-9]+}}, %arg0 : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
cell.cell @integer(%i: tensor<?x4xi32>) -> tensor<?x4xi32> {
  %0 = cell.add %i, %i : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
  %1 = cell.div %0, %i : (tensor<?x4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
  cell.return %1 : tensor<?x4xi32>
}

// Activations keep the type; they accept every floating-point type.
// CHECK-LABEL: cell.cell @activations(
// CHECK-NEXT: %[[S:[0-9]+]] = sigmoid %arg0 : tensor<?x8xf32>
// CHECK-NEXT: %[[T:[0-9]+]] = tanh %[[S]] : tensor<?x8xf32>
// CHECK-NEXT: %[[R:[0-9]+]] = relu %[[T]] : tensor<?x8xf32>
// CHECK-NEXT: %[[H:[0-9]+]] = tanh %arg1 : tensor<?x2x3xf16>
// CHECK-NEXT: %[[B:[0-9]+]] = sigmoid %arg2 : tensor<?xbf16>
// CHECK-NEXT: return %[[R]], %[[H]], %[[B]] : tensor<?x8xf32>, tensor<?x2x3xf16>, tensor<?xbf16>
cell.cell @activations(%x: tensor<?x8xf32>, %h: tensor<?x2x3xf16>, %b: tensor<?xbf16>)
    -> (tensor<?x8xf32>, tensor<?x2x3xf16>, tensor<?xbf16>) {
  %0 = cell.sigmoid %x : tensor<?x8xf32>
  %1 = cell.tanh %0 : tensor<?x8xf32>
  %2 = cell.relu %1 : tensor<?x8xf32>
  %3 = cell.tanh %h : tensor<?x2x3xf16>
  %4 = cell.sigmoid %b : tensor<?xbf16>
  cell.return %2, %3, %4 : tensor<?x8xf32>, tensor<?x2x3xf16>, tensor<?xbf16>
}

// identity keeps the type (any element type); cast changes only the element type.
// CHECK-LABEL: cell.cell @identity_cast(
// CHECK-NEXT: %[[I:[0-9]+]] = identity %arg0 : tensor<?x4xi64>
// CHECK-NEXT: %[[F:[0-9]+]] = cast %[[I]] : tensor<?x4xi64> -> tensor<?x4xf32>
// CHECK-NEXT: %[[H:[0-9]+]] = cast %[[F]] : tensor<?x4xf32> -> tensor<?x4xf16>
// CHECK-NEXT: %[[B:[0-9]+]] = cast %[[H]] : tensor<?x4xf16> -> tensor<?x4xi1>
// CHECK-NEXT: %[[S:[0-9]+]] = cast %[[B]] : tensor<?x4xi1> -> tensor<?x4xi1>
// CHECK-NEXT: return %[[S]] : tensor<?x4xi1>
cell.cell @identity_cast(%i: tensor<?x4xi64>) -> tensor<?x4xi1> {
  %0 = cell.identity %i : tensor<?x4xi64>
  %1 = cell.cast %0 : tensor<?x4xi64> -> tensor<?x4xf32>
  %2 = cell.cast %1 : tensor<?x4xf32> -> tensor<?x4xf16>
  %3 = cell.cast %2 : tensor<?x4xf16> -> tensor<?x4xi1>
  // A cast to the same type is valid (and folds away under -canonicalize).
  %4 = cell.cast %3 : tensor<?x4xi1> -> tensor<?x4xi1>
  cell.return %4 : tensor<?x4xi1>
}

//--- invalid.mlir

// Operands of a binary op have the same element type.
cell.cell @element_types(%x: tensor<?x8xf32>, %y: tensor<?x8xf16>) {
  // expected-error @+1 {{element types differ: 'f32' and 'f16'}}
  %0 = cell.add %x, %y : (tensor<?x8xf32>, tensor<?x8xf16>) -> tensor<?x8xf32>
  cell.return
}

// -----

// Integers and floats do not mix either.
cell.cell @int_float(%x: tensor<?x8xf32>, %i: tensor<?x8xi32>) {
  // expected-error @+1 {{element types differ: 'i32' and 'f32'}}
  %0 = cell.mul %i, %x : (tensor<?x8xi32>, tensor<?x8xf32>) -> tensor<?x8xi32>
  cell.return
}

// -----

// Two static dimensions that differ and are not 1 do not broadcast.
cell.cell @incompatible(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) {
  // expected-error @+1 {{dimensions 8 and 4 do not broadcast}}
  %0 = cell.sub %x, %y : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// The dynamic batch does not broadcast against a static N > 1 (right operand).
cell.cell @batch_vs_static(%x: tensor<?x8xf32>) {
  %c = cell.constant dense<1.0> : tensor<4x8xf32>
  // expected-error @+1 {{the dynamic batch dimension cannot broadcast against size 4}}
  %0 = cell.mul %x, %c : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// The dynamic batch does not broadcast against a static N > 1 (left operand).
cell.cell @static_vs_batch(%x: tensor<?x8xf32>) {
  %c = cell.constant dense<1.0> : tensor<3x8xf32>
  // expected-error @+1 {{the dynamic batch dimension cannot broadcast against size 3}}
  %0 = cell.div %c, %x : (tensor<3x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// The declared result shape must be the broadcast shape (the batch is kept).
cell.cell @wrong_result_shape(%x: tensor<?x8xf32>) {
  %c = cell.constant dense<1.0> : tensor<1x8xf32>
  // expected-error @+1 {{'cell.div' op inferred type(s) 'tensor<?x8xf32>' are incompatible with return type(s) of operation 'tensor<1x8xf32>'}}
  %0 = cell.div %x, %c : (tensor<?x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  cell.return
}

// -----

// The declared result element type must be the operands' element type.
cell.cell @wrong_result_element(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.add' op inferred type(s) 'tensor<?x8xf32>' are incompatible with return type(s) of operation 'tensor<?x8xf16>'}}
  %0 = cell.add %x, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf16>
  cell.return
}

// -----

// Broadcasting must not line the batch of one operand up with a static 1 of
// another batched operand: [B,1,8] * [B,8] would be [B,B,8], a tensor with two
// batch dimensions (which cell.reshape and cell.cell results reject).
cell.cell @two_batch_dims(%x: tensor<?x8xf32>, %y: tensor<?x1x8xf32>) {
  // expected-error @+1 {{more than one dynamic (batch) dimension}}
  %0 = cell.mul %y, %x : (tensor<?x1x8xf32>, tensor<?x8xf32>) -> tensor<?x?x8xf32>
  cell.return
}

// -----

// Binary ops take exactly two operands.
cell.cell @one_operand(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.add' op expected 2 operands, but found 1}}
  %0 = "cell.add"(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return
}

// -----

// sigmoid is floating-point only.
cell.cell @sigmoid_int(%x: tensor<?x8xi32>) {
  // expected-error @+1 {{'cell.sigmoid' op expects a floating-point tensor, got 'tensor<?x8xi32>'}}
  %0 = cell.sigmoid %x : tensor<?x8xi32>
  cell.return
}

// -----

// tanh is floating-point only.
cell.cell @tanh_int(%x: tensor<?x8xi64>) {
  // expected-error @+1 {{'cell.tanh' op expects a floating-point tensor, got 'tensor<?x8xi64>'}}
  %0 = cell.tanh %x : tensor<?x8xi64>
  cell.return
}

// -----

// relu is floating-point only.
cell.cell @relu_int(%x: tensor<?x8xi8>) {
  // expected-error @+1 {{'cell.relu' op expects a floating-point tensor, got 'tensor<?x8xi8>'}}
  %0 = cell.relu %x : tensor<?x8xi8>
  cell.return
}

// -----

// An activation keeps its operand type.
cell.cell @tanh_changes_type(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.tanh' op requires the same type for all operands and results}}
  %0 = "cell.tanh"(%x) : (tensor<?x8xf32>) -> tensor<?x8xf16>
  cell.return
}

// -----

// identity keeps its operand type.
cell.cell @identity_changes_type(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.identity' op requires the same type for all operands and results}}
  %0 = "cell.identity"(%x) : (tensor<?x8xf32>) -> tensor<?x4xf32>
  cell.return
}

// -----

// cast keeps the shape.
cell.cell @cast_shape(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.cast' op changes the shape from 'tensor<?x8xf32>' to 'tensor<?x4xi32>'}}
  %0 = cell.cast %x : tensor<?x8xf32> -> tensor<?x4xi32>
  cell.return
}

// -----

// cast keeps the batch dimension dynamic.
cell.cell @cast_batch(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'cell.cast' op changes the shape from 'tensor<?x8xf32>' to 'tensor<1x8xf16>'}}
  %0 = cell.cast %x : tensor<?x8xf32> -> tensor<1x8xf16>
  cell.return
}
