//===- TokenVocabulary.h - The token ids a seq2seq decoder knows -*- C++
//-*-===//
//
// A greedy decoder feeds back the token it picks: the ids it can pick are
// those of the ArgMax that produces its token output (the logits' width),
// the ids it can read those of the embedding table its token input indexes.
// The manifest's bos_token must be one the decoder can read and its
// eos_token one it can pick, or decoding never ends before
// max_decode_length.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_MANIFEST_TOKENVOCABULARY_H
#define CELLC_MANIFEST_TOKENVOCABULARY_H

#include "cell/IR/CellOps.h"
#include "compiler/manifest/Manifest.h"

#include <optional>

namespace cellc {

/// The number of ids the result `name` of `cell` can take when it is an
/// ArgMax (through casts and reshapes) over a fixed width; none otherwise.
std::optional<int64_t> argMaxRange(mlir::cell::CellOp cell,
                                   llvm::StringRef name);
/// The rows of the weight table that the argument `name` of `cell` indexes
/// with a Gather (through casts and reshapes); none when it indexes none.
std::optional<int64_t> gatherRange(mlir::cell::CellOp cell,
                                   llvm::StringRef name);

/// bos_token within the decoder's embedding table and eos_token among the
/// ids it can produce (unless allow_eos_outside_vocabulary), as far as the
/// cells show them.
mlir::LogicalResult checkSeq2SeqTokens(const Seq2SeqSpec &spec,
                                       mlir::cell::CellOp decoder);

} // namespace cellc

#endif // CELLC_MANIFEST_TOKENVOCABULARY_H
