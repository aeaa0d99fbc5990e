//===- ManifestTest.cpp - Manifest parsing, checks and binding ------------===//
//
// Parses manifests from strings and checks the resulting structs, the exact
// diagnostics (message and line:column) of bad manifests, and the binding of
// roles onto cells imported from small ONNX models in textual syntax.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/OnnxImporter.h"
#include "compiler/manifest/ManifestBinding.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace cellc;
using mlir::cell::Role;

namespace {

/// Collects "line:col: message" for every error emitted while alive.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &context)
      : handler_(&context, [this](Diagnostic &diag) {
          std::string text;
          if (auto loc = diag.getLocation().dyn_cast<FileLineColLoc>())
            text = std::to_string(loc.getLine()) + ":" +
                   std::to_string(loc.getColumn()) + ": ";
          messages.push_back(text + diag.str());
          return success();
        }) {}
  std::vector<std::string> messages;

private:
  ScopedDiagnosticHandler handler_;
};

class ManifestTest : public ::testing::Test {
protected:
  ManifestTest() { loadImporterDialects(context); }

  /// Parses `text`; expects failure with exactly one error containing
  /// `expected`, and returns that error.
  std::string expectError(const std::string &text) {
    DiagnosticCollector diags(context);
    FailureOr<Manifest> manifest = parseManifest(text, "m.yaml", context);
    EXPECT_TRUE(failed(manifest));
    EXPECT_EQ(diags.messages.size(), 1u);
    return diags.messages.empty() ? "" : diags.messages.front();
  }

  Manifest expectValid(const std::string &text) {
    DiagnosticCollector diags(context);
    FailureOr<Manifest> manifest = parseManifest(text, "m.yaml", context);
    EXPECT_TRUE(succeeded(manifest));
    for (const std::string &message : diags.messages)
      ADD_FAILURE() << message;
    return succeeded(manifest) ? *manifest : Manifest();
  }

  MLIRContext context;
};

const char *kChain = R"(name: rnn
structure: chain
cells:
  - name: step
    onnx: step.onnx
    batch_sizes: [1, 4, 16]
    inputs:
      x: {role: input}
      h: {role: state}
    outputs:
      h_next: {role: state, updates: h, emit: true}
)";

std::string replaced(std::string text, const std::string &from,
                     const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

TEST_F(ManifestTest, ValidChainIsParsed) {
  Manifest manifest = expectValid(kChain);
  EXPECT_EQ(manifest.name, "rnn");
  EXPECT_EQ(manifest.structure, Structure::Chain);
  ASSERT_EQ(manifest.cells.size(), 1u);
  const CellSpec &cell = manifest.cells[0];
  EXPECT_EQ(cell.name, "step");
  EXPECT_EQ(cell.onnxPath, "step.onnx");
  EXPECT_EQ(cell.batchSizes, (std::vector<int64_t>{1, 4, 16}));
  EXPECT_EQ(manifest.effectivePriority(cell), 0);
  ASSERT_EQ(cell.inputs.size(), 2u);
  EXPECT_EQ(cell.inputs[1].name, "h");
  EXPECT_EQ(cell.inputs[1].role, Role::State);
  ASSERT_EQ(cell.outputs.size(), 1u);
  EXPECT_EQ(cell.outputs[0].updates, "h");
  EXPECT_TRUE(cell.outputs[0].emit);
}

TEST_F(ManifestTest, JsonIsAccepted) {
  Manifest manifest = expectValid(R"({"name": "rnn", "structure": "chain",
    "cells": [{"name": "step", "onnx": "s.onnx", "batch_sizes": [2],
               "inputs": {"h": {"role": "state"}},
               "outputs": {"h2": {"role": "state", "updates": "h"}}}]})");
  ASSERT_EQ(manifest.cells.size(), 1u);
  EXPECT_EQ(manifest.cells[0].batchSizes, (std::vector<int64_t>{2}));
}

TEST_F(ManifestTest, UnknownKeyIsReportedWithPosition) {
  std::string error =
      expectError(replaced(kChain, "batch_sizes", "batchsizes"));
  EXPECT_EQ(error.rfind("6:5: unknown key 'batchsizes' in a cell", 0), 0u)
      << error;
}

TEST_F(ManifestTest, MissingKeyIsReported) {
  std::string error =
      expectError(replaced(kChain, "    onnx: step.onnx\n", ""));
  EXPECT_NE(error.find("a cell needs the key 'onnx'"), std::string::npos)
      << error;
}

TEST_F(ManifestTest, BatchSizesMustIncrease) {
  std::string error = expectError(replaced(kChain, "[1, 4, 16]", "[1, 16, 4]"));
  EXPECT_NE(error.find("must increase strictly; 4 follows 16"),
            std::string::npos)
      << error;
  error = expectError(replaced(kChain, "[1, 4, 16]", "[0, 4]"));
  EXPECT_NE(error.find("a batch size must be in 1..65536, got 0"),
            std::string::npos)
      << error;
}

TEST_F(ManifestTest, UnknownRoleListsTheChoices) {
  std::string error =
      expectError(replaced(kChain, "{role: input}", "{role: stat}"));
  EXPECT_NE(error.find("role 'stat' of input 'x' must be one of: input, state, "
                       "child"),
            std::string::npos)
      << error;
}

TEST_F(ManifestTest, StateInputMustBeUpdated) {
  std::string error = expectError(replaced(
      kChain, "{role: state, updates: h, emit: true}", "{role: output}"));
  EXPECT_NE(error.find("state input 'h' of cell 'step' is updated by no state "
                       "output"),
            std::string::npos)
      << error;
}

TEST_F(ManifestTest, UpdatesMustNameAStateInput) {
  std::string error = expectError(replaced(kChain, "updates: h", "updates: x"));
  EXPECT_NE(error.find("updates 'x', which is not a state input"),
            std::string::npos)
      << error;
}

TEST_F(ManifestTest, YamlSyntaxErrorHasALine) {
  std::string error = expectError("name: \"rnn\nstructure: chain\n");
  EXPECT_NE(error.find("YAML syntax error"), std::string::npos) << error;
}

TEST_F(ManifestTest, UnknownStructure) {
  std::string error = expectError(replaced(kChain, "chain", "graph"));
  EXPECT_NE(error.find("structure 'graph' must be one of"), std::string::npos)
      << error;
}

const char *kSeq2Seq = R"(name: s2s
structure: seq2seq
seq2seq:
  encoder: enc
  decoder: dec
  initial_state: {h: h}
  token_input: token
  token_output: next
  bos_token: 1
  eos_token: 2
  max_decode_length: 10
cells:
  - name: enc
    onnx: enc.onnx
    batch_sizes: [1, 2]
    inputs: {token: {role: input}, h: {role: state}}
    outputs: {h_next: {role: state, updates: h}}
  - name: dec
    onnx: dec.onnx
    batch_sizes: [1, 2]
    inputs: {token: {role: input}, h: {role: state}}
    outputs: {next: {role: output}, h_next: {role: state, updates: h}}
)";

TEST_F(ManifestTest, Seq2SeqDefaultsPutTheDecoderFirst) {
  Manifest manifest = expectValid(kSeq2Seq);
  ASSERT_TRUE(manifest.seq2seq.has_value());
  EXPECT_EQ(manifest.seq2seq->eosToken, 2);
  EXPECT_EQ(manifest.effectivePriority(*manifest.findCell("dec")), 1);
  EXPECT_EQ(manifest.effectivePriority(*manifest.findCell("enc")), 0);
}

TEST_F(ManifestTest, Seq2SeqUnknownCellListsTheCells) {
  std::string error =
      expectError(replaced(kSeq2Seq, "decoder: dec", "decoder: de"));
  EXPECT_NE(error.find("decoder 'de' is not a cell of the manifest (cells are: "
                       "enc, dec)"),
            std::string::npos)
      << error;
}

TEST_F(ManifestTest, Seq2SeqEveryDecoderStateNeedsAStart) {
  std::string error = expectError(
      replaced(kSeq2Seq, "initial_state: {h: h}", "initial_state: {}"));
  EXPECT_NE(error.find("initial_state does not say where decoder state 'h' "
                       "starts from"),
            std::string::npos)
      << error;
}

TEST_F(ManifestTest, Seq2SeqTokenOutputMustBeAnOutput) {
  std::string error = expectError(
      replaced(kSeq2Seq, "token_output: next", "token_output: h_next"));
  EXPECT_NE(
      error.find("token_output 'h_next' must be an output of role output"),
      std::string::npos)
      << error;
}

const char *kTree = R"(name: tree
structure: tree
tree: {leaf: leaf, internal: node, arity: 2}
cells:
  - name: leaf
    onnx: leaf.onnx
    batch_sizes: [1]
    inputs: {token: {role: input}}
    outputs: {h: {role: state}}
  - name: node
    onnx: node.onnx
    batch_sizes: [1]
    inputs:
      left: {role: child, child: 0, from: h}
      right: {role: child, child: 1, from: h}
    outputs: {h: {role: state}}
)";

TEST_F(ManifestTest, TreeIsParsed) {
  Manifest manifest = expectValid(kTree);
  ASSERT_TRUE(manifest.tree.has_value());
  EXPECT_EQ(manifest.tree->arity, 2);
  EXPECT_EQ(manifest.effectivePriority(*manifest.findCell("node")), 1);
  EXPECT_EQ(manifest.findCell("node")->inputs[1].child, 1);
}

TEST_F(ManifestTest, TreeNeedsEveryChild) {
  std::string error = expectError(replaced(kTree, "child: 1", "child: 0"));
  EXPECT_NE(error.find("child 0's 'h' is taken twice"), std::string::npos)
      << error;
  error = expectError(replaced(kTree, "arity: 2", "arity: 3"));
  EXPECT_NE(error.find("takes child 2"), std::string::npos) << error;
}

TEST_F(ManifestTest, SectionOfAnotherStructureIsRejected) {
  std::string text =
      std::string(kChain) + "tree: {leaf: a, internal: b, arity: 2}\n";
  std::string error = expectError(text);
  EXPECT_NE(error.find("section 'tree' belongs to structure tree"),
            std::string::npos)
      << error;
}

//===----------------------------------------------------------------------===//
// Binding against imported ONNX cells
//===----------------------------------------------------------------------===//

const char *kStepOnnx = R"(<ir_version: 8, opset_import: ["" : 14]>
step (float[N, 4] x, float[N, 4] h) => (float[N, 4] h_next) {
  s = Add(x, h)
  h_next = Tanh(s)
}
)";

class BindingTest : public ManifestTest {
protected:
  /// Imports kStepOnnx (or `onnx`) as cell "step" and binds `manifest`.
  LogicalResult bind(const std::string &manifestText,
                     const std::string &onnx = kStepOnnx) {
    module = ModuleOp::create(UnknownLoc::get(&context));
    onnx_model::Model model;
    std::string error;
    EXPECT_TRUE(
        onnx_model::parseModel(onnx, true, "step.onnxtxt", model, error))
        << error;
    FailureOr<Manifest> manifest =
        parseManifest(manifestText, "m.yaml", context);
    EXPECT_TRUE(succeeded(manifest));
    if (failed(manifest) || failed(importOnnxCell(model, "step", *module)))
      return failure();
    return bindManifest(*manifest, *module);
  }

  OwningOpRef<ModuleOp> module;
};

TEST_F(BindingTest, RolesLandOnTheCell) {
  DiagnosticCollector diags(context);
  ASSERT_TRUE(succeeded(bind(kChain)));
  EXPECT_TRUE(diags.messages.empty());
  auto cell = module->lookupSymbol<mlir::cell::CellOp>("step");
  ASSERT_TRUE(cell);
  EXPECT_EQ(cell.getArgumentRole(0), Role::Input);
  EXPECT_EQ(cell.getArgumentRole(1), Role::State);
  EXPECT_EQ(cell.getResultRole(0), Role::State);
  EXPECT_TRUE(succeeded(verify(*module)));
  auto sizes = cell->getAttrOfType<DenseI64ArrayAttr>("cell.batch_sizes");
  ASSERT_TRUE(sizes);
  EXPECT_EQ(sizes.asArrayRef(), ArrayRef<int64_t>({1, 4, 16}));
}

TEST_F(BindingTest, RoleMatchingNoInputIsReported) {
  DiagnosticCollector diags(context);
  EXPECT_TRUE(
      failed(bind(replaced(kChain, "x: {role: input}", "xx: {role: input}"))));
  ASSERT_EQ(diags.messages.size(), 1u);
  EXPECT_NE(diags.messages[0].find("cell 'step': 'xx' matches no ONNX input of "
                                   "step.onnx (its inputs are: x, h)"),
            std::string::npos)
      << diags.messages[0];
}

TEST_F(BindingTest, InputWithoutRoleIsReported) {
  DiagnosticCollector diags(context);
  EXPECT_TRUE(failed(bind(replaced(kChain, "      x: {role: input}\n", ""))));
  ASSERT_EQ(diags.messages.size(), 1u);
  EXPECT_NE(diags.messages[0].find(
                "cell 'step': ONNX input 'x' has no role in the manifest"),
            std::string::npos)
      << diags.messages[0];
}

TEST_F(BindingTest, StateOutputWithAnotherShapeIsReported) {
  const char *wider = R"(<ir_version: 8, opset_import: ["" : 14]>
step (float[N, 4] x, float[N, 4] h) => (float[N, 8] h_next) {
  h_next = Concat <axis = 1> (x, h)
}
)";
  DiagnosticCollector diags(context);
  EXPECT_TRUE(failed(bind(kChain, wider)));
  ASSERT_EQ(diags.messages.size(), 1u);
  EXPECT_NE(
      diags.messages[0].find(
          "state output 'h_next' has type 'tensor<?x8xf32>' but the state "
          "input 'h' it updates has type 'tensor<?x4xf32>'"),
      std::string::npos)
      << diags.messages[0];
}

} // namespace
