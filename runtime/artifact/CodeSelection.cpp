//===- CodeSelection.cpp - Choosing a cell's CUBIN or PTX -----------------===//
#include "artifact/CodeSelection.h"

#include <cctype>

namespace cellrun {
namespace {

struct PtxTarget {
  int version = -1; // XY of compute_XY; -1 when unparsable
  char suffix = 0;  // 'a' (this exact architecture), 'f' (its family) or 0
};

/// Parses "<prefix>XY", "<prefix>XYa" and "<prefix>XYf".
PtxTarget parseArch(const std::string &arch, const std::string &prefix) {
  PtxTarget target;
  if (arch.compare(0, prefix.size(), prefix) != 0)
    return target;
  size_t i = prefix.size();
  int version = 0;
  size_t digits = 0;
  for (; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]));
       ++i, ++digits) {
    version = version * 10 + (arch[i] - '0');
    if (version > 10000)
      return target;
  }
  if (digits == 0)
    return target;
  if (i + 1 == arch.size() && (arch[i] == 'a' || arch[i] == 'f'))
    target.suffix = arch[i++];
  if (i != arch.size())
    return target;
  target.version = version;
  return target;
}

/// Parses "compute_XY", "compute_XYa" and "compute_XYf".
PtxTarget parsePtxArch(const std::string &arch) {
  return parseArch(arch, "compute_");
}

/// Whether the driver can JIT PTX for `target` onto a device of `cc`.
bool ptxRunsOn(PtxTarget target, int cc) {
  if (target.version < 0 || target.version > cc)
    return false;
  if (target.suffix == 'a')
    return target.version == cc;
  if (target.suffix == 'f')
    return target.version / 10 == cc / 10;
  return true;
}

} // namespace

Result<CodeChoice> selectCode(const LoadedArtifact &artifact,
                              const std::string &cellName,
                              int deviceComputeCapability) {
  Result<const cellpack::CellType *> cell = artifact.cell(cellName);
  if (!cell.ok())
    return cell.status();
  const cellpack::CellCode &code = artifact.code(**cell);
  const std::string exact = "sm_" + std::to_string(deviceComputeCapability);

  const auto *cubins = code.cubins();
  for (const std::string &wanted : {exact, exact + "a"})
    for (uint32_t i = 0; cubins && i < cubins->size(); ++i) {
      const cellpack::CodeImage *image = cubins->Get(i);
      if (image->arch()->str() != wanted)
        continue;
      const uint8_t *data = image->cubin() ? image->cubin()->data() : nullptr;
      size_t size = image->cubin() ? image->cubin()->size() : 0;
      return CodeChoice{CodeChoice::Kind::Cubin, wanted, data, size};
    }

  std::string ptxArch = code.ptx_arch() ? code.ptx_arch()->str() : "";
  bool hasPtx = code.ptx() && code.ptx()->size() > 0;
  if (hasPtx && ptxRunsOn(parsePtxArch(ptxArch), deviceComputeCapability)) {
    // A FlatBuffers string is followed by a NUL inside the buffer.
    return CodeChoice{CodeChoice::Kind::Ptx, ptxArch,
                      reinterpret_cast<const uint8_t *>(code.ptx()->c_str()),
                      code.ptx()->size()};
  }

  std::string have;
  for (uint32_t i = 0; cubins && i < cubins->size(); ++i)
    have += (have.empty() ? "" : ", ") + cubins->Get(i)->arch()->str();
  std::string ptxText =
      hasPtx ? "PTX is " + (ptxArch.empty() ? "of no stated arch" : ptxArch)
             : "there is no PTX";
  std::string cubinText = have.empty() ? "the artifact has no CUBINs"
                                       : "the artifact has CUBINs for " + have;
  return Status(StatusCode::Unsupported, artifact.displayName() + ": cell '" +
                                             cellName + "': no CUBIN for " +
                                             exact + " and no usable PTX (" +
                                             ptxText + "); " + cubinText);
}

int codeArchNumber(const std::string &arch) {
  int cubin = parseArch(arch, "sm_").version;
  return cubin >= 0 ? cubin : parseArch(arch, "compute_").version;
}

} // namespace cellrun
