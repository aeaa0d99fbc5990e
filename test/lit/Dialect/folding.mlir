// Folders under -canonicalize: no-op identities (x + 0, x * 1, identity,
// same-type cast/reshape, identity transpose, empty squeeze/unsqueeze, views
// of views, single-input concat), arithmetic on two inline constants of the
// result type,
// and what must stay (broadcasting, integer division by zero, weight blobs).
//
// RUN: cell-opt %s -canonicalize | cell-opt | FileCheck %s
// RUN: cell-opt %s -canonicalize > %t.1 && cell-opt %t.1 > %t.2 && diff %t.1 %t.2

// x + (-0.0) -> x, with the zero on the right (exact for every float x).
// CHECK-LABEL: cell.cell @add_zero_rhs(
// CHECK-NEXT: return %x : tensor<?x8xf32>
cell.cell @add_zero_rhs(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x8xf32> {
  %zero = cell.constant dense<-0.0> : tensor<8xf32>
  %0 = cell.add %x, %zero : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  cell.return %0 : tensor<?x8xf32>
}

// (-0.0) + x -> x, with the zero on the left (and broadcasting over the batch).
// CHECK-LABEL: cell.cell @add_zero_lhs(
// CHECK-NEXT: return %x : tensor<?x8xf32>
cell.cell @add_zero_lhs(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x8xf32> {
  %zero = cell.constant dense<-0.0> : tensor<1x8xf32>
  %0 = cell.add %zero, %x : (tensor<1x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return %0 : tensor<?x8xf32>
}

// x + (+0.0) stays: it turns x = -0.0 into +0.0.
// CHECK-LABEL: cell.cell @add_positive_zero_stays(
// CHECK: add %x, %{{.*}} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
cell.cell @add_positive_zero_stays(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x8xf32> {
  %zero = cell.constant dense<0.0> : tensor<8xf32>
  %0 = cell.add %x, %zero : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  cell.return %0 : tensor<?x8xf32>
}

// x - 0 -> x.
// CHECK-LABEL: cell.cell @sub_zero(
// CHECK-NEXT: return %x : tensor<?x8xf32>
cell.cell @sub_zero(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x8xf32> {
  %zero = cell.constant dense<0.0> : tensor<f32>
  %0 = cell.sub %x, %zero : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  cell.return %0 : tensor<?x8xf32>
}

// x * 1 -> x and 1 * x -> x.
// CHECK-LABEL: cell.cell @mul_one(
// CHECK-NEXT: return %x, %x : tensor<?x8xf32>, tensor<?x8xf32>
cell.cell @mul_one(%x: tensor<?x8xf32> {cell.name = "x"}) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %one = cell.constant dense<1.0> : tensor<8xf32>
  %0 = cell.mul %x, %one : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = cell.mul %one, %x : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  cell.return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// x / 1 -> x.
// CHECK-LABEL: cell.cell @div_one(
// CHECK-NEXT: return %x : tensor<?x8xf32>
cell.cell @div_one(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x8xf32> {
  %one = cell.constant dense<1.0> : tensor<1x8xf32>
  %0 = cell.div %x, %one : (tensor<?x8xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  cell.return %0 : tensor<?x8xf32>
}

// The same identities on integers: i + 0, i * 1, i / 1.
// CHECK-LABEL: cell.cell @integer_identities(
// CHECK-NEXT: return %i, %i, %i : tensor<?x4xi32>, tensor<?x4xi32>, tensor<?x4xi32>
cell.cell @integer_identities(%i: tensor<?x4xi32> {cell.name = "i"}) -> (tensor<?x4xi32>, tensor<?x4xi32>, tensor<?x4xi32>) {
  %zero = cell.constant dense<0> : tensor<4xi32>
  %one = cell.constant dense<1> : tensor<4xi32>
  %0 = cell.add %zero, %i : (tensor<4xi32>, tensor<?x4xi32>) -> tensor<?x4xi32>
  %1 = cell.mul %i, %one : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  %2 = cell.div %i, %one : (tensor<?x4xi32>, tensor<4xi32>) -> tensor<?x4xi32>
  cell.return %0, %1, %2 : tensor<?x4xi32>, tensor<?x4xi32>, tensor<?x4xi32>
}

// Two inline float constants of the result type fold (splat and non-splat mixed).
// CHECK-LABEL: cell.cell @fold_float_constants(
// CHECK-DAG: %[[ADD:[0-9]+]] = constant dense<[4.000000e+00, 7.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[SUB:[0-9]+]] = constant dense<[-2.000000e+00, -3.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[MUL:[0-9]+]] = constant dense<[2.000000e+00, 4.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[DIV:[0-9]+]] = constant dense<[1.500000e+00, 2.500000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[SPLAT:[0-9]+]] = constant dense<4.000000e+00> : tensor<2xf32>
// CHECK-NOT: add %{{[0-9]+}}, %{{[0-9]+}}
// CHECK: %[[R0:[0-9]+]] = add %x, %[[ADD]] :
// CHECK-NEXT: %[[R1:[0-9]+]] = add %x, %[[SUB]] :
// CHECK-NEXT: %[[R2:[0-9]+]] = add %x, %[[MUL]] :
// CHECK-NEXT: %[[R3:[0-9]+]] = add %x, %[[DIV]] :
// CHECK-NEXT: %[[R4:[0-9]+]] = add %x, %[[SPLAT]] :
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]] :
cell.cell @fold_float_constants(%x: tensor<?x2xf32> {cell.name = "x"})
    -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %a = cell.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = cell.constant dense<[3.0, 5.0]> : tensor<2xf32>
  %two = cell.constant dense<2.0> : tensor<2xf32>
  %0 = cell.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = cell.sub %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = cell.mul %a, %two : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %3 = cell.div %b, %two : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %4 = cell.add %two, %two : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r0 = cell.add %x, %0 : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %r1 = cell.add %x, %1 : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %r2 = cell.add %x, %2 : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %r3 = cell.add %x, %3 : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %r4 = cell.add %x, %4 : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  cell.return %r0, %r1, %r2, %r3, %r4 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}

// Integer constants fold too; signed division truncates towards zero.
// CHECK-LABEL: cell.cell @fold_int_constants(
// CHECK-DAG: %[[ADD:[0-9]+]] = constant dense<[9, -5]> : tensor<2xi32>
// CHECK-DAG: %[[MUL:[0-9]+]] = constant dense<[14, -14]> : tensor<2xi32>
// CHECK-DAG: %[[DIV:[0-9]+]] = constant dense<[3, -3]> : tensor<2xi32>
// CHECK-NOT: div
// CHECK: %[[R0:[0-9]+]] = add %i, %[[ADD]] :
// CHECK-NEXT: %[[R1:[0-9]+]] = add %i, %[[MUL]] :
// CHECK-NEXT: %[[R2:[0-9]+]] = add %i, %[[DIV]] :
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]] :
cell.cell @fold_int_constants(%i: tensor<?x2xi32> {cell.name = "i"})
    -> (tensor<?x2xi32>, tensor<?x2xi32>, tensor<?x2xi32>) {
  %a = cell.constant dense<[7, -7]> : tensor<2xi32>
  %two = cell.constant dense<2> : tensor<2xi32>
  %0 = cell.add %a, %two : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %1 = cell.mul %a, %two : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %2 = cell.div %a, %two : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %r0 = cell.add %i, %0 : (tensor<?x2xi32>, tensor<2xi32>) -> tensor<?x2xi32>
  %r1 = cell.add %i, %1 : (tensor<?x2xi32>, tensor<2xi32>) -> tensor<?x2xi32>
  %r2 = cell.add %i, %2 : (tensor<?x2xi32>, tensor<2xi32>) -> tensor<?x2xi32>
  cell.return %r0, %r1, %r2 : tensor<?x2xi32>, tensor<?x2xi32>, tensor<?x2xi32>
}

// Unsigned division folds as unsigned: 200 / 2 is 100 in ui8 (not 228, which is
// what a signed division of the bit pattern -56 by 2 gives).
// CHECK-LABEL: cell.cell @fold_unsigned_div(
// CHECK-DAG: %[[Q:[0-9]+]] = constant dense<100> : tensor<2xui8>
// CHECK-NOT: div
// CHECK: %[[R:[0-9]+]] = add %u, %[[Q]] : (tensor<?x2xui8>, tensor<2xui8>) -> tensor<?x2xui8>
// CHECK-NEXT: return %[[R]] :
cell.cell @fold_unsigned_div(%u: tensor<?x2xui8> {cell.name = "u"}) -> tensor<?x2xui8> {
  %a = cell.constant dense<200> : tensor<2xui8>
  %two = cell.constant dense<2> : tensor<2xui8>
  %0 = cell.div %a, %two : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  %r = cell.add %u, %0 : (tensor<?x2xui8>, tensor<2xui8>) -> tensor<?x2xui8>
  cell.return %r : tensor<?x2xui8>
}

// identity, a cast to the same type, an identity transpose, a reshape to the
// same type, squeeze/unsqueeze of no axes and a single-input concat all fold
// to their input.
// CHECK-LABEL: cell.cell @plumbing(
// CHECK-NEXT: return %x, %x, %x, %x, %x, %x, %x : tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
cell.cell @plumbing(%x: tensor<?x2x4xf32> {cell.name = "x"})
    -> (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>,
        tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) {
  %0 = cell.identity %x : tensor<?x2x4xf32>
  %1 = cell.cast %x : tensor<?x2x4xf32> -> tensor<?x2x4xf32>
  %2 = cell.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %3 = cell.reshape %x : tensor<?x2x4xf32> -> tensor<?x2x4xf32>
  %4 = cell.squeeze %x {axes = array<i64>} : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %5 = cell.unsqueeze %x {axes = array<i64>} : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %6 = cell.concat %x {axis = 1 : i64} : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  cell.return %0, %1, %2, %3, %4, %5, %6 : tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>,
                                           tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
}

// Chains of foldable plumbing collapse completely.
// CHECK-LABEL: cell.cell @plumbing_chain(
// CHECK-NEXT: return %x : tensor<?x8xf32>
cell.cell @plumbing_chain(%x: tensor<?x8xf32> {cell.name = "x"}) -> tensor<?x8xf32> {
  %zero = cell.constant dense<-0.0> : tensor<8xf32>
  %0 = cell.identity %x : tensor<?x8xf32>
  %1 = cell.add %0, %zero : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %2 = cell.transpose %1 {perm = array<i64: 0, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %3 = cell.cast %2 : tensor<?x8xf32> -> tensor<?x8xf32>
  cell.return %3 : tensor<?x8xf32>
}

// Ops that change something do not fold: a cast to another type, a real
// transpose, a real reshape, a squeeze/unsqueeze of some axes, a two-input concat.
// CHECK-LABEL: cell.cell @plumbing_kept(
// CHECK-NEXT: %[[C:[0-9]+]] = cast %x : tensor<?x2x4xf32> -> tensor<?x2x4xf16>
// CHECK-NEXT: %[[T:[0-9]+]] = transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<?x2x4xf32>) -> tensor<?x4x2xf32>
// CHECK-NEXT: %[[R:[0-9]+]] = reshape %x : tensor<?x2x4xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[U:[0-9]+]] = unsqueeze %x {axes = array<i64: 1>} : (tensor<?x2x4xf32>) -> tensor<?x1x2x4xf32>
// CHECK-NEXT: %[[S:[0-9]+]] = squeeze %y {axes = array<i64: 1>} : (tensor<?x1x2x4xf32>) -> tensor<?x2x4xf32>
// CHECK-NEXT: %[[K:[0-9]+]] = concat %x, %x {axis = 2 : i64} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x8xf32>
// CHECK-NEXT: return %[[C]], %[[T]], %[[R]], %[[U]], %[[S]], %[[K]] :
cell.cell @plumbing_kept(%x: tensor<?x2x4xf32> {cell.name = "x"}, %y: tensor<?x1x2x4xf32> {cell.name = "y"})
    -> (tensor<?x2x4xf16>, tensor<?x4x2xf32>, tensor<?x8xf32>, tensor<?x1x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x8xf32>) {
  %0 = cell.cast %x : tensor<?x2x4xf32> -> tensor<?x2x4xf16>
  %1 = cell.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<?x2x4xf32>) -> tensor<?x4x2xf32>
  %2 = cell.reshape %x : tensor<?x2x4xf32> -> tensor<?x8xf32>
  %3 = cell.unsqueeze %x {axes = array<i64: 1>} : (tensor<?x2x4xf32>) -> tensor<?x1x2x4xf32>
  %4 = cell.squeeze %y {axes = array<i64: 1>} : (tensor<?x1x2x4xf32>) -> tensor<?x2x4xf32>
  %5 = cell.concat %x, %x {axis = 2 : i64} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x8xf32>
  cell.return %0, %1, %2, %3, %4, %5 : tensor<?x2x4xf16>, tensor<?x4x2xf32>, tensor<?x8xf32>, tensor<?x1x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x8xf32>
}

// Views of views (reshape, squeeze, unsqueeze: all reshapes of batch-leading
// rows) collapse: back to the original where the types meet, else to one
// reshape of the original. The importer makes such chains around the ONNX
// LSTM/GRU/RNN ops.
// CHECK-LABEL: cell.cell @view_chains(
// CHECK-NEXT: %[[R:[0-9]+]] = reshape %x : tensor<?x8xf32> -> tensor<?x4x2xf32>
// CHECK-NEXT: return %x, %x, %x, %[[R]] :
cell.cell @view_chains(%x: tensor<?x8xf32> {cell.name = "x"})
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4x2xf32>) {
  %0 = cell.reshape %x : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %1 = cell.reshape %0 : tensor<?x2x4xf32> -> tensor<?x8xf32>
  %2 = cell.unsqueeze %x {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1x8xf32>
  %3 = cell.reshape %2 : tensor<?x1x8xf32> -> tensor<?x8xf32>
  %4 = cell.reshape %x : tensor<?x8xf32> -> tensor<?x1x8xf32>
  %5 = cell.squeeze %4 {axes = array<i64: 1>} : (tensor<?x1x8xf32>) -> tensor<?x8xf32>
  %6 = cell.reshape %0 : tensor<?x2x4xf32> -> tensor<?x4x2xf32>
  cell.return %1, %3, %5, %6 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4x2xf32>
}

// x + 1, x * 0, 0 - x and x - 1 do not fold (x * 0 is not 0 for NaN/inf).
// CHECK-LABEL: cell.cell @not_identities(
// CHECK-DAG: %[[ONE:[0-9]+]] = constant dense<1.000000e+00> : tensor<8xf32>
// CHECK-DAG: %[[ZERO:[0-9]+]] = constant dense<0.000000e+00> : tensor<8xf32>
// CHECK: %[[A:[0-9]+]] = add %x, %[[ONE]] : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[M:[0-9]+]] = mul %x, %[[ZERO]] : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[S:[0-9]+]] = sub %[[ZERO]], %x : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[S1:[0-9]+]] = sub %x, %[[ONE]] : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: return %[[A]], %[[M]], %[[S]], %[[S1]] :
cell.cell @not_identities(%x: tensor<?x8xf32> {cell.name = "x"})
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %one = cell.constant dense<1.0> : tensor<8xf32>
  %zero = cell.constant dense<0.0> : tensor<8xf32>
  %0 = cell.add %x, %one : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = cell.mul %x, %zero : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %2 = cell.sub %zero, %x : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %3 = cell.sub %x, %one : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  cell.return %0, %1, %2, %3 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// x + 0 where the zero widens x ([B,1] + [1,8] -> [B,8]) cannot fold to x, and
// neither can a * 1 where 1 widens a; two constants whose types differ from the
// result (broadcasting) are not folded either.
// CHECK-LABEL: cell.cell @broadcasting_kept(
// CHECK-DAG: %[[ZERO:[0-9]+]] = constant dense<0.000000e+00> : tensor<1x8xf32>
// CHECK-DAG: %[[ROW:[0-9]+]] = constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[ONES:[0-9]+]] = constant dense<1.000000e+00> : tensor<3x2xf32>
// CHECK: %[[A:[0-9]+]] = add %y, %[[ZERO]] : (tensor<?x1xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[M:[0-9]+]] = mul %[[ROW]], %[[ONES]] : (tensor<2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %[[P:[0-9]+]] = add %[[ROW]], %[[ONES]] : (tensor<2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %[[B:[0-9]+]] = add %v, %[[M]] :
// CHECK-NEXT: %[[C:[0-9]+]] = add %v, %[[P]] :
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]] :
cell.cell @broadcasting_kept(%y: tensor<?x1xf32> {cell.name = "y"}, %v: tensor<?x3x2xf32> {cell.name = "v"})
    -> (tensor<?x8xf32>, tensor<?x3x2xf32>, tensor<?x3x2xf32>) {
  %zero = cell.constant dense<0.0> : tensor<1x8xf32>
  %row = cell.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %ones = cell.constant dense<1.0> : tensor<3x2xf32>
  %0 = cell.add %y, %zero : (tensor<?x1xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  %1 = cell.mul %row, %ones : (tensor<2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %2 = cell.add %row, %ones : (tensor<2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %3 = cell.add %v, %1 : (tensor<?x3x2xf32>, tensor<3x2xf32>) -> tensor<?x3x2xf32>
  %4 = cell.add %v, %2 : (tensor<?x3x2xf32>, tensor<3x2xf32>) -> tensor<?x3x2xf32>
  cell.return %0, %3, %4 : tensor<?x8xf32>, tensor<?x3x2xf32>, tensor<?x3x2xf32>
}

// Integer division by zero is left alone, even if only one element is zero.
// CHECK-LABEL: cell.cell @int_div_by_zero(
// CHECK-DAG: %[[A:[0-9]+]] = constant dense<[7, -7]> : tensor<2xi32>
// CHECK-DAG: %[[B:[0-9]+]] = constant dense<[2, 0]> : tensor<2xi32>
// CHECK-DAG: %[[Z:[0-9]+]] = constant dense<0> : tensor<2xi32>
// CHECK: %[[D0:[0-9]+]] = div %[[A]], %[[B]] : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK-NEXT: %[[D1:[0-9]+]] = div %[[A]], %[[Z]] : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK-NEXT: %[[D2:[0-9]+]] = div %i, %[[Z]] : (tensor<?x2xi32>, tensor<2xi32>) -> tensor<?x2xi32>
cell.cell @int_div_by_zero(%i: tensor<?x2xi32> {cell.name = "i"})
    -> (tensor<?x2xi32>, tensor<?x2xi32>, tensor<?x2xi32>) {
  %a = cell.constant dense<[7, -7]> : tensor<2xi32>
  %b = cell.constant dense<[2, 0]> : tensor<2xi32>
  %z = cell.constant dense<0> : tensor<2xi32>
  %0 = cell.div %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %1 = cell.div %a, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %2 = cell.div %i, %z : (tensor<?x2xi32>, tensor<2xi32>) -> tensor<?x2xi32>
  %r0 = cell.add %i, %0 : (tensor<?x2xi32>, tensor<2xi32>) -> tensor<?x2xi32>
  %r1 = cell.add %i, %1 : (tensor<?x2xi32>, tensor<2xi32>) -> tensor<?x2xi32>
  cell.return %r0, %r1, %2 : tensor<?x2xi32>, tensor<?x2xi32>, tensor<?x2xi32>
}

// Weight blobs (dense_resource) are never folded element by element.
// CHECK-LABEL: cell.cell @resources_kept(
// CHECK-DAG: %[[W:[0-9]+]] = constant dense_resource<w> : tensor<2xf32>
// CHECK-DAG: %[[A:[0-9]+]] = constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: %[[S:[0-9]+]] = add %[[W]], %[[A]] : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[P:[0-9]+]] = mul %[[W]], %[[W]] : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT: %{{[0-9]+}} = add %x, %[[S]] :
// CHECK-NEXT: %{{[0-9]+}} = add %x, %[[P]] :
cell.cell @resources_kept(%x: tensor<?x2xf32> {cell.name = "x"}) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = cell.constant dense_resource<w> : tensor<2xf32>
  %a = cell.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = cell.add %w, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = cell.mul %w, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r0 = cell.add %x, %0 : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %r1 = cell.add %x, %1 : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  cell.return %r0, %r1 : tensor<?x2xf32>, tensor<?x2xf32>
}

// The blob survives canonicalization unchanged.
// CHECK: dialect_resources: {
// CHECK-NEXT: builtin: {
// CHECK-NEXT: w: "0x040000000000803F00000040"
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F00000040"
    }
  }
#-}
