// cell.cell and cell.return: roles, the cell.* argument/result attributes,
// entry block arguments named after their ONNX names, and the verifiers.
//
// RUN: split-file --leading-lines %s %t
// RUN: cell-opt %t/valid.mlir | cell-opt | FileCheck %s
// RUN: cell-opt %t/valid.mlir > %t.1 && cell-opt %t.1 > %t.2 && diff %t.1 %t.2
// RUN: cell-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- valid.mlir

// An input and a state updated by the result; the block arguments print under
// their ONNX names and the body refers to them by those names.
// CHECK-LABEL: cell.cell @rnn(
// CHECK-SAME: %x: tensor<?x8xf32> {cell.name = "x", cell.role = #cell.role<input>},
// CHECK-SAME: %h: tensor<?x8xf32> {cell.name = "h", cell.role = #cell.role<state>})
// CHECK-SAME: -> (tensor<?x8xf32> {cell.name = "h_next", cell.role = #cell.role<state>, cell.updates = "h"}) {
// CHECK-NEXT: %[[SUM:[0-9]+]] = add %x, %h : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[NEXT:[0-9]+]] = tanh %[[SUM]] : tensor<?x8xf32>
// CHECK-NEXT: return %[[NEXT]] : tensor<?x8xf32>
// CHECK-NEXT: }
cell.cell @rnn(%x: tensor<?x8xf32> {cell.name = "x", cell.role = #cell.role<input>},
               %h: tensor<?x8xf32> {cell.name = "h", cell.role = #cell.role<state>})
    -> (tensor<?x8xf32> {cell.name = "h_next", cell.role = #cell.role<state>, cell.updates = "h"}) {
  %0 = cell.add %x, %h : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %1 = cell.tanh %0 : tensor<?x8xf32>
  cell.return %1 : tensor<?x8xf32>
}

// Two states, one of them emitted (cell.emit prints as a unit attribute, the
// attributes print sorted), and an explicit output of another element type.
// CHECK-LABEL: cell.cell @lstm(
// CHECK-SAME: %x: tensor<?x4xf32> {cell.name = "x", cell.role = #cell.role<input>},
// CHECK-SAME: %h: tensor<?x4xf32> {cell.name = "h", cell.role = #cell.role<state>},
// CHECK-SAME: %c: tensor<?x4xf32> {cell.name = "c", cell.role = #cell.role<state>})
// CHECK-SAME: -> (tensor<?x4xf32> {cell.emit, cell.name = "h_out", cell.role = #cell.role<state>, cell.updates = "h"},
// CHECK-SAME: tensor<?x4xf32> {cell.name = "c_out", cell.role = #cell.role<state>, cell.updates = "c"},
// CHECK-SAME: tensor<?x1xi64> {cell.name = "token", cell.role = #cell.role<output>}) {
// CHECK: %[[TOK:[0-9]+]] = argmax %h {axis = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x1xi64>
// CHECK-NEXT: return %{{[0-9]+}}, %c, %[[TOK]] : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1xi64>
cell.cell @lstm(%x: tensor<?x4xf32> {cell.name = "x", cell.role = #cell.role<input>},
                %h: tensor<?x4xf32> {cell.name = "h", cell.role = #cell.role<state>},
                %c: tensor<?x4xf32> {cell.name = "c", cell.role = #cell.role<state>})
    -> (tensor<?x4xf32> {cell.updates = "h", cell.role = #cell.role<state>, cell.name = "h_out", cell.emit},
        tensor<?x4xf32> {cell.name = "c_out", cell.role = #cell.role<state>, cell.updates = "c"},
        tensor<?x1xi64> {cell.name = "token", cell.role = #cell.role<output>}) {
  %0 = cell.mul %x, %h : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = cell.argmax %h {axis = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x1xi64>
  cell.return %0, %c, %1 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1xi64>
}

// Child arguments: cell.child (printed as i64) and cell.from.
// CHECK-LABEL: cell.cell @tree(
// CHECK-SAME: %x: tensor<?x4xf32> {cell.name = "x", cell.role = #cell.role<input>},
// CHECK-SAME: %h_l: tensor<?x4xf32> {cell.child = 0 : i64, cell.from = "h", cell.name = "h_l", cell.role = #cell.role<child>},
// CHECK-SAME: %h_r: tensor<?x4xf32> {cell.child = 1 : i64, cell.from = "h", cell.name = "h_r", cell.role = #cell.role<child>})
// CHECK-SAME: -> (tensor<?x4xf32> {cell.name = "h", cell.role = #cell.role<output>}) {
// CHECK-NEXT: %[[S:[0-9]+]] = add %h_l, %h_r : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT: %{{[0-9]+}} = add %x, %[[S]] : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
cell.cell @tree(%x: tensor<?x4xf32> {cell.name = "x", cell.role = #cell.role<input>},
                %l: tensor<?x4xf32> {cell.name = "h_l", cell.role = #cell.role<child>, cell.child = 0, cell.from = "h"},
                %r: tensor<?x4xf32> {cell.name = "h_r", cell.role = #cell.role<child>, cell.child = 1 : i64, cell.from = "h"})
    -> (tensor<?x4xf32> {cell.name = "h", cell.role = #cell.role<output>}) {
  %0 = cell.add %l, %r : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = cell.add %x, %0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  cell.return %1 : tensor<?x4xf32>
}

// Without attributes the roles default to input/output; arguments print as
// %argN and a single attribute-less result prints without parentheses. Batch
// rows may have any rank >= 1 and any element type.
// CHECK-LABEL: cell.cell @defaults(
// CHECK-SAME: %arg0: tensor<?xi64>, %arg1: tensor<?x2x3xf16>) -> tensor<?x2x3xf16> {
// CHECK-NEXT: return %arg1 : tensor<?x2x3xf16>
cell.cell @defaults(%tok: tensor<?xi64>, %v: tensor<?x2x3xf16>) -> tensor<?x2x3xf16> {
  cell.return %v : tensor<?x2x3xf16>
}

// ONNX names that are not plain identifiers are sanitized for the SSA name but
// kept verbatim in cell.name; a name equal to a default name ("arg0") does not
// clash with an unnamed argument.
// CHECK-LABEL: cell.cell @onnx_names(
// CHECK-SAME: %input.1: tensor<?x8xf32> {cell.name = "input.1"},
// CHECK-SAME: %onnx3A3AGemm_3: tensor<?x8xf32> {cell.name = "onnx::Gemm_3"},
// CHECK-SAME: %_0: tensor<?x8xf32> {cell.name = "0"},
// CHECK-SAME: %x_y: tensor<?x8xf32> {cell.name = "x y"},
// CHECK-SAME: %[[UNNAMED:arg[0-9_]+]]: tensor<?x8xf32>,
// CHECK-SAME: %arg0: tensor<?x8xf32> {cell.name = "arg0"})
// CHECK-NEXT: return %input.1, %onnx3A3AGemm_3, %_0, %x_y, %[[UNNAMED]], %arg0 :
cell.cell @onnx_names(%a: tensor<?x8xf32> {cell.name = "input.1"},
                      %b: tensor<?x8xf32> {cell.name = "onnx::Gemm_3"},
                      %c: tensor<?x8xf32> {cell.name = "0"},
                      %d: tensor<?x8xf32> {cell.name = "x y"},
                      %e: tensor<?x8xf32>,
                      %f: tensor<?x8xf32> {cell.name = "arg0"})
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  cell.return %a, %b, %c, %d, %e, %f : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// A cell with no arguments and no results; cell.return has no operands.
// CHECK-LABEL: cell.cell @nothing() {
// CHECK-NEXT: return{{$}}
// CHECK-NEXT: }
cell.cell @nothing() {
  cell.return
}

//--- invalid.mlir

// An argument whose leading dimension is static is not a batch of rows.
// expected-error @+1 {{'cell.cell' op argument #0 must have the dynamic batch as its leading dimension, got 'tensor<4x8xf32>'}}
cell.cell @static_leading(%x: tensor<4x8xf32>) {
  cell.return
}

// -----

// A rank-0 argument has no batch dimension.
// expected-error @+1 {{'cell.cell' op argument #1 must have the dynamic batch as its leading dimension, got 'tensor<f32>'}}
cell.cell @rank0(%x: tensor<?x8xf32>, %s: tensor<f32>) {
  cell.return
}

// -----

// Only the leading (batch) dimension may be dynamic.
// expected-error @+1 {{'cell.cell' op argument #0 may only be dynamic in its leading (batch) dimension, got 'tensor<?x?xf32>'}}
cell.cell @dynamic_inner(%x: tensor<?x?xf32>) {
  cell.return
}

// -----

// Unranked tensors are rejected.
// expected-error @+1 {{'cell.cell' op argument #0 must be a ranked tensor, got 'tensor<*xf32>'}}
cell.cell @unranked(%x: tensor<*xf32>) {
  cell.return
}

// -----

// Non-tensor arguments are rejected.
// expected-error @+1 {{'cell.cell' op argument #0 must be a ranked tensor, got 'i32'}}
cell.cell @scalar(%x: i32) {
  cell.return
}

// -----

// Results are batch-leading too: a static leading dimension is rejected.
// expected-error @+1 {{'cell.cell' op result #0 must have the dynamic batch as its leading dimension, got 'tensor<1x8xf32>'}}
cell.cell @static_result(%x: tensor<?x8xf32>) -> tensor<1x8xf32> {
  %0 = cell.constant dense<0.0> : tensor<1x8xf32>
  cell.return %0 : tensor<1x8xf32>
}

// -----

// A rank-0 result has no batch dimension.
// expected-error @+1 {{'cell.cell' op result #0 must have the dynamic batch as its leading dimension, got 'tensor<f32>'}}
cell.cell @rank0_result(%x: tensor<?x8xf32>) -> tensor<f32> {
  %0 = cell.constant dense<0.0> : tensor<f32>
  cell.return %0 : tensor<f32>
}

// -----

// A result dynamic in a non-leading dimension is rejected.
// expected-error @+1 {{'cell.cell' op result #0 may only be dynamic in its leading (batch) dimension, got 'tensor<?x?xf32>'}}
cell.cell @dynamic_inner_result(%x: tensor<?x8xf32>) -> tensor<?x?xf32> {
  %0 = builtin.unrealized_conversion_cast %x : tensor<?x8xf32> to tensor<?x?xf32>
  cell.return %0 : tensor<?x?xf32>
}

// -----

// 'output' is a role of results only.
// expected-error @+1 {{'cell.cell' op argument #0 cannot have role 'output'}}
cell.cell @output_argument(%x: tensor<?x8xf32> {cell.role = #cell.role<output>}) {
  cell.return
}

// -----

// 'input' is a role of arguments only.
// expected-error @+1 {{'cell.cell' op result #0 must have role 'state' or 'output'}}
cell.cell @input_result(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {cell.role = #cell.role<input>}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// 'child' is a role of arguments only.
// expected-error @+1 {{'cell.cell' op result #1 must have role 'state' or 'output'}}
cell.cell @child_result(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32> {cell.role = #cell.role<child>}) {
  cell.return %x, %x : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// cell.updates must name an argument.
// expected-error @+1 {{'cell.cell' op result #0 updates 'c', which names no argument}}
cell.cell @updates_missing(%h: tensor<?x8xf32> {cell.name = "h", cell.role = #cell.role<state>})
    -> (tensor<?x8xf32> {cell.role = #cell.role<state>, cell.updates = "c"}) {
  cell.return %h : tensor<?x8xf32>
}

// -----

// cell.updates must name a state argument, not an input.
// expected-error @+1 {{'cell.cell' op result #0 updates 'x', which is not a state argument}}
cell.cell @updates_input(%x: tensor<?x8xf32> {cell.name = "x", cell.role = #cell.role<input>})
    -> (tensor<?x8xf32> {cell.role = #cell.role<state>, cell.updates = "x"}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// An argument without a role is an input, so it cannot be updated either.
// expected-error @+1 {{'cell.cell' op result #0 updates 'x', which is not a state argument}}
cell.cell @updates_default_role(%x: tensor<?x8xf32> {cell.name = "x"})
    -> (tensor<?x8xf32> {cell.role = #cell.role<state>, cell.updates = "x"}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// A state result has the type of the state it updates.
// expected-error @+1 {{'cell.cell' op state result #0 has type 'tensor<?x4xf32>' but the state 'h' it updates has type 'tensor<?x8xf32>'}}
cell.cell @updates_type(%h: tensor<?x8xf32> {cell.name = "h", cell.role = #cell.role<state>})
    -> (tensor<?x4xf32> {cell.role = #cell.role<state>, cell.updates = "h"}) {
  %0 = cell.slice %h {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  cell.return %0 : tensor<?x4xf32>
}

// -----

// Two results cannot update the same state.
// expected-error @+1 {{'cell.cell' op state 'h' is updated by two results}}
cell.cell @updated_twice(%h: tensor<?x8xf32> {cell.name = "h", cell.role = #cell.role<state>})
    -> (tensor<?x8xf32> {cell.role = #cell.role<state>, cell.updates = "h"},
        tensor<?x8xf32> {cell.role = #cell.role<state>, cell.updates = "h"}) {
  cell.return %h, %h : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Only a state result can update a state (a result without a role is an output).
// expected-error @+1 {{'cell.cell' op result #0 updates 'h' but is not a state}}
cell.cell @output_updates(%h: tensor<?x8xf32> {cell.name = "h", cell.role = #cell.role<state>})
    -> (tensor<?x8xf32> {cell.updates = "h"}) {
  cell.return %h : tensor<?x8xf32>
}

// -----

// A child argument needs cell.from as well as cell.child.
// expected-error @+1 {{'cell.cell' op child argument #0 needs 'cell.child' and 'cell.from'}}
cell.cell @child_without_from(%c: tensor<?x8xf32> {cell.role = #cell.role<child>, cell.child = 0}) {
  cell.return
}

// -----

// A child argument needs cell.child as well as cell.from.
// expected-error @+1 {{'cell.cell' op child argument #1 needs 'cell.child' and 'cell.from'}}
cell.cell @child_without_child(%x: tensor<?x8xf32>, %c: tensor<?x8xf32> {cell.role = #cell.role<child>, cell.from = "h"}) {
  cell.return
}

// -----

// A child argument with neither attribute.
// expected-error @+1 {{'cell.cell' op child argument #0 needs 'cell.child' and 'cell.from'}}
cell.cell @child_bare(%c: tensor<?x8xf32> {cell.role = #cell.role<child>}) {
  cell.return
}

// -----

// cell.child/cell.from on an argument that is not a child.
// expected-error @+1 {{'cell.cell' op argument #0 has 'cell.child'/'cell.from' but is not a child}}
cell.cell @not_a_child(%c: tensor<?x8xf32> {cell.role = #cell.role<state>, cell.child = 0, cell.from = "h"}) {
  cell.return
}

// -----

// An output (default role) cannot be emitted.
// expected-error @+1 {{'cell.cell' op result #0: only a state result can be emitted; an output is returned anyway}}
cell.cell @emit_default_output(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {cell.emit}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// An explicit output cannot be emitted.
// expected-error @+1 {{'cell.cell' op result #1: only a state result can be emitted; an output is returned anyway}}
cell.cell @emit_output(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32> {cell.role = #cell.role<output>, cell.emit}) {
  cell.return %x, %x : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Two arguments cannot carry the same ONNX name.
// expected-error @+1 {{'cell.cell' op two arguments are named 'x'}}
cell.cell @duplicate_names(%a: tensor<?x8xf32> {cell.name = "x"}, %b: tensor<?x8xf32> {cell.name = "x"}) {
  cell.return
}

// -----

// Two results cannot carry the same ONNX name either.
// expected-error @+1 {{'cell.cell' op two results are named 'y'}}
cell.cell @duplicate_result_names(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {cell.name = "y"}, tensor<?x8xf32> {cell.name = "y"}) {
  cell.return %x, %x : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// cell.return returns one value per cell result.
cell.cell @return_count(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'cell.return' op returns 0 values but the cell has 1 results}}
  cell.return
}

// -----

// cell.return with more values than results.
cell.cell @return_too_many(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'cell.return' op returns 2 values but the cell has 1 results}}
  cell.return %x, %x : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// cell.return values have the cell's result types.
cell.cell @return_type(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'cell.return' op operand #0 has type 'tensor<?x8xf32>' but cell result #0 has type 'tensor<?x4xf32>'}}
  cell.return %x : tensor<?x8xf32>
}

// -----

// cell.return only terminates a cell.
func.func @return_outside() {
  // expected-error @+1 {{'cell.return' op expects parent op 'cell.cell'}}
  cell.return
}

// -----

// A cell has a body.
// expected-error @+1 {{'cell.cell' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
cell.cell @declaration(%x: tensor<?x8xf32>)

// -----

// Unknown cell.* attribute on an argument.
// expected-error @+1 {{'cell.cell' op unknown attribute 'cell.foo'}}
cell.cell @unknown_argument_attr(%x: tensor<?x8xf32> {cell.foo = 1}) {
  cell.return
}

// -----

// Unknown cell.* attribute on a result.
// expected-error @+1 {{'cell.cell' op unknown attribute 'cell.bar'}}
cell.cell @unknown_result_attr(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {cell.bar}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// cell.role must be a #cell.role.
// expected-error @+1 {{'cell.cell' op 'cell.role' must be a #cell.role}}
cell.cell @role_string(%x: tensor<?x8xf32> {cell.role = "input"}) {
  cell.return
}

// -----

// cell.name must be a string.
// expected-error @+1 {{'cell.cell' op 'cell.name' must be a string}}
cell.cell @name_integer(%x: tensor<?x8xf32> {cell.name = 3}) {
  cell.return
}

// -----

// cell.updates belongs on a result.
// expected-error @+1 {{'cell.cell' op 'cell.updates' belongs on a result}}
cell.cell @updates_on_argument(%x: tensor<?x8xf32> {cell.updates = "x"}) {
  cell.return
}

// -----

// cell.from belongs on an argument.
// expected-error @+1 {{'cell.cell' op 'cell.from' belongs on an argument}}
cell.cell @from_on_result(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {cell.from = "x"}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// cell.child belongs on an argument.
// expected-error @+1 {{'cell.cell' op 'cell.child' belongs on an argument}}
cell.cell @child_on_result(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {cell.child = 0}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// cell.child is a non-negative integer.
// expected-error @+1 {{'cell.cell' op 'cell.child' must be a non-negative integer}}
cell.cell @child_negative(%c: tensor<?x8xf32> {cell.role = #cell.role<child>, cell.child = -1, cell.from = "h"}) {
  cell.return
}

// -----

// cell.emit belongs on a result.
// expected-error @+1 {{'cell.cell' op 'cell.emit' is a unit attribute of a result}}
cell.cell @emit_on_argument(%x: tensor<?x8xf32> {cell.emit}) {
  cell.return
}

// -----

// cell.emit is a unit attribute.
// expected-error @+1 {{'cell.cell' op 'cell.emit' is a unit attribute of a result}}
cell.cell @emit_with_value(%x: tensor<?x8xf32> {cell.name = "x", cell.role = #cell.role<state>})
    -> (tensor<?x8xf32> {cell.role = #cell.role<state>, cell.updates = "x", cell.emit = true}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// cell.projected_by names a cell, on an argument.
// expected-error @+1 {{'cell.cell' op 'cell.projected_by' is a string attribute of an argument}}
cell.cell @projected_result(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {cell.role = #cell.role<output>, cell.projected_by = "p"}) {
  cell.return %x : tensor<?x8xf32>
}

// -----

// expected-error @+1 {{'cell.cell' op 'cell.projected_by' is a string attribute of an argument}}
cell.cell @projected_by_number(%x: tensor<?x8xf32> {cell.projected_by = 3}) {
  cell.return
}

// -----

// cell.* argument attributes are only meaningful on a cell (verifyRegionArgAttribute).
// expected-error @+1 {{'func.func' op 'cell.role' is only meaningful on a 'cell.cell'}}
func.func @func_argument(%x: tensor<?x8xf32> {cell.role = #cell.role<input>}) {
  return
}

// -----

// cell.* result attributes are only meaningful on a cell (verifyRegionResultAttribute).
// expected-error @+1 {{'func.func' op 'cell.name' is only meaningful on a 'cell.cell'}}
func.func @func_result(%x: tensor<?x8xf32>) -> (tensor<?x8xf32> {cell.name = "y"}) {
  return %x : tensor<?x8xf32>
}
