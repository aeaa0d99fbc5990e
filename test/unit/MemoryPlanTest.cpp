//===- MemoryPlanTest.cpp - The memory plan checked by brute force --------===//
//
// Compiles every example model (hidden 64) through cell-plan-memory and, for
// every batch-specialized cell, recomputes what the plan claims from scratch
// (a buffer lives from its writer to its last reader, and at up to 16 rows
// a GEMM's operands through the kernel after it that reads its result):
// buffers live at the same point never share bytes, the recorded peak equals
// the largest sum of live buffers over all points, the workspace holds every
// buffer, and every batch size of the manifest has its copy.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/OnnxImporter.h"
#include "compiler/manifest/ManifestBinding.h"
#include "compiler/pipeline/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace cellc;

namespace {

struct LiveBuffer {
  int64_t first, last, offset, bytes;
};

int64_t alignedBytes(Type type) {
  auto tensor = type.cast<RankedTensorType>();
  int64_t bytes =
      tensor.getNumElements() * ((tensor.getElementTypeBitWidth() + 7) / 8);
  return (bytes + 255) / 256 * 256;
}

/// Every buffer the plan placed, with its live range over top-level ops.
std::vector<LiveBuffer> plannedBuffers(mlir::cell::CellOp cell,
                                       int64_t &points) {
  Block &body = cell.getBody().front();
  int64_t batch = cell->getAttrOfType<IntegerAttr>("cell.batch_size").getInt();
  llvm::DenseMap<Operation *, int64_t> index;
  points = 0;
  for (Operation &op : body)
    index[&op] = points++;
  std::vector<LiveBuffer> buffers;
  for (Operation &op : body) {
    auto offsets = op.getAttrOfType<DenseI64ArrayAttr>("cell.offsets");
    bool computes =
        isa<mlir::cell::GemmOp, mlir::cell::MatMulOp, mlir::cell::FusedOp>(op);
    EXPECT_EQ(computes, static_cast<bool>(offsets))
        << "op without a plan entry in @" << cell.getSymName().str();
    if (!offsets)
      continue;
    for (OpResult result : op.getResults()) {
      int64_t offset = offsets[result.getResultNumber()];
      if (isa<mlir::cell::GemmOp, mlir::cell::MatMulOp>(op)) {
        EXPECT_GE(offset, 0) << "a GEMM result must be in the workspace";
      }
      if (offset < 0)
        continue;
      EXPECT_EQ(offset % 256, 0);
      LiveBuffer buffer{index[&op], index[&op], offset,
                        alignedBytes(result.getType())};
      for (Operation *user : result.getUsers()) {
        buffer.last = std::max(buffer.last, index[user]);
        // At up to 16 rows a GEMM's operands live on through the kernel
        // right after it (constants aside) that reads its result: the two
        // may run as one kernel.
        if (batch <= 16 && isa<mlir::cell::GemmOp>(user)) {
          Operation *next = user->getNextNode();
          while (next && isa<mlir::cell::ConstantOp>(next))
            next = next->getNextNode();
          if (next && isa<mlir::cell::FusedOp>(next) &&
              llvm::is_contained(next->getOperands(), user->getResult(0)))
            buffer.last = std::max(buffer.last, index[next]);
        }
      }
      buffers.push_back(buffer);
    }
  }
  return buffers;
}

void checkPlan(mlir::cell::CellOp cell) {
  std::string name = cell.getSymName().str();
  int64_t points = 0;
  // A single-kernel step (cell-fuse-step) has no buffers at all.
  std::vector<LiveBuffer> buffers = plannedBuffers(cell, points);
  int64_t peak = 0, end = 0;
  for (int64_t point = 0; point < points; ++point) {
    int64_t live = 0;
    for (const LiveBuffer &buffer : buffers)
      if (buffer.first <= point && point <= buffer.last)
        live += buffer.bytes;
    peak = std::max(peak, live);
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    end = std::max(end, buffers[i].offset + buffers[i].bytes);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const LiveBuffer &a = buffers[i], &b = buffers[j];
      bool together = a.first <= b.last && b.first <= a.last;
      bool shareBytes =
          a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(together && shareBytes)
          << name << ": buffers " << i << " and " << j
          << " are live together and overlap";
    }
  }
  auto attr = [&](StringRef key) {
    auto value = cell->getAttrOfType<IntegerAttr>(key);
    EXPECT_TRUE(value) << name << " lacks " << key.str();
    return value ? value.getInt() : -1;
  };
  EXPECT_EQ(attr("cell.peak_bytes"), peak) << name;
  EXPECT_EQ(attr("cell.workspace_bytes"), end) << name;
  EXPECT_GE(attr("cell.workspace_bytes"), peak) << name;
}

class MemoryPlanTest : public ::testing::TestWithParam<const char *> {};

TEST_P(MemoryPlanTest, EveryBatchSizeHasAnExactPlan) {
  std::string model = GetParam();
  MLIRContext context;
  loadImporterDialects(context);
  std::vector<std::string> errors;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    errors.push_back(diag.str());
    return success();
  });
  std::string manifestPath =
      std::string(CELL_SOURCE_DIR) + "/examples/" + model + "/model.yaml";
  FailureOr<Manifest> manifest = readManifest(manifestPath, context);
  ASSERT_TRUE(succeeded(manifest)) << (errors.empty() ? "" : errors[0]);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  for (const CellSpec &cell : manifest->cells) {
    onnx_model::Model onnx;
    std::string error;
    std::string path = std::string(CELL_EXAMPLES_BUILD_DIR) + "/" + model +
                       "/" + cell.onnxPath;
    ASSERT_TRUE(onnx_model::readModel(path, onnx, error)) << error;
    ASSERT_TRUE(succeeded(importOnnxCell(onnx, cell.name, *module)))
        << (errors.empty() ? "" : errors[0]);
  }
  ASSERT_TRUE(succeeded(bindManifest(*manifest, *module)));
  ASSERT_TRUE(succeeded(runPipeline(*module, Stage::PlanMemory)))
      << (errors.empty() ? "" : errors[0]);
  ASSERT_TRUE(succeeded(verify(*module)));

  for (const CellSpec &spec : manifest->cells)
    for (int64_t batch : spec.batchSizes) {
      std::string name = spec.name + "_b" + std::to_string(batch);
      auto cell = module->lookupSymbol<mlir::cell::CellOp>(name);
      ASSERT_TRUE(cell) << "no copy " << name;
      checkPlan(cell);
    }
}

INSTANTIATE_TEST_SUITE_P(Examples, MemoryPlanTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm"));

} // namespace
