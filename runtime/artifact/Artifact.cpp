//===- Artifact.cpp - Loading a cellpack and reading it -------------------===//
//
// The loader runs its checks in a fixed order and stops at the first
// failure: the file can be read; the size prefix matches the bytes that
// follow; the file identifier is "CPAK"; the envelope passes the
// FlatBuffers Verifier (without the nested Model, so that a file of another
// format version is reported as such); the format version; the payload
// checksum; the nested Model passes the Verifier; the semantic checks of
// ArtifactChecks.cpp. Only then are the lookup tables built.
//
//===----------------------------------------------------------------------===//
#include "artifact/Artifact.h"

#include "ArtifactChecks.h"
#include "Checksum.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <unistd.h>

namespace cellrun {

size_t dtypeSize(cellpack::DType dtype) {
  using cellpack::DType;
  switch (dtype) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
    return 2;
  case DType::I8:
  case DType::Bool:
    return 1;
  }
  return 0;
}

void detail::AlignedBytes::Free::operator()(uint8_t *p) const {
  ::operator delete(p, std::align_val_t(kArtifactAlignment));
}

namespace detail {
namespace {

/// Largest file the FlatBuffers Verifier accepts (2 GiB - 1).
constexpr uint64_t kMaxFileBytes = FLATBUFFERS_MAX_BUFFER_SIZE - 1;

/// Nested-Model Verifier limits: far above any real model (a cell has a few
/// dozen tables a batch size), low enough to bound a hostile file's cost.
constexpr flatbuffers::uoffset_t kMaxModelDepth = 128;
constexpr flatbuffers::uoffset_t kMaxModelTables = 1u << 26;

AlignedBytes allocateAligned(size_t size) {
  AlignedBytes bytes;
  // operator new of size 0 still returns a unique pointer, which we keep
  // so that fileData() is never null.
  bytes.data.reset(static_cast<uint8_t *>(
      ::operator new(size ? size : 1, std::align_val_t(kArtifactAlignment))));
  bytes.size = size;
  return bytes;
}

std::string hex64(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

/// The identifier bytes as text, non-printable ones as \xNN.
std::string printableIdentifier(const uint8_t *bytes) {
  std::string text;
  for (int i = 0; i < 4; ++i) {
    if (bytes[i] >= 0x20 && bytes[i] < 0x7f && bytes[i] != '\\') {
      text += static_cast<char>(bytes[i]);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", bytes[i]);
      text += escaped;
    }
  }
  return text;
}

Result<AlignedBytes> readWholeFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    return Status(error == ENOENT ? StatusCode::NotFound : StatusCode::IoError,
                  path + ": cannot open: " + std::strerror(error));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return Status(StatusCode::IoError,
                  path + ": cannot stat: " + std::strerror(errno));
  if (S_ISDIR(info.st_mode))
    return Status(StatusCode::IoError, path + ": is a directory");
  if (!S_ISREG(info.st_mode))
    return Status(StatusCode::IoError, path + ": is not a regular file");
  uint64_t size = static_cast<uint64_t>(info.st_size);
  if (size > kMaxFileBytes)
    return Status(StatusCode::DataLoss,
                  path + ": too large for a cellpack: " + std::to_string(size) +
                      " bytes (at most 2 GiB)");
  AlignedBytes bytes = allocateAligned(size);
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::read(fd, bytes.data.get() + done, size - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return Status(StatusCode::IoError,
                    path + ": cannot read: " + std::strerror(errno));
    if (got == 0) // The file shrank while we read it.
      return Status(StatusCode::IoError,
                    path + ": cannot read: the file changed while reading");
    done += static_cast<size_t>(got);
  }
  return bytes;
}

} // namespace

/// Runs the checks and builds a LoadedArtifact (a friend of it).
class ArtifactLoader {
public:
  static Result<std::shared_ptr<const LoadedArtifact>>
  load(AlignedBytes bytes, const std::string &displayName) {
    std::shared_ptr<LoadedArtifact> artifact(new LoadedArtifact());
    artifact->displayName_ = displayName;
    artifact->bytes_ = std::move(bytes);
    if (Status s = check(*artifact); !s.isOk())
      return Status(s.code(), artifact->displayName_ + ": " + s.message());
    index(*artifact);
    return std::shared_ptr<const LoadedArtifact>(std::move(artifact));
  }

private:
  static Status corrupt(const std::string &message) {
    return Status(StatusCode::DataLoss, message);
  }

  /// Runs the loader's checks in their fixed order (the file comment): the
  /// first failure is the one reported. Sets the artifact's envelope and
  /// model once they verify.
  static Status check(LoadedArtifact &artifact) {
    const uint8_t *data = artifact.bytes_.data.get();
    size_t size = artifact.bytes_.size;
    if (Status s = checkFraming(data, size); !s.isOk())
      return s;

    // The envelope alone: a Model of another format version may not verify
    // with this schema, and that must be reported as a version mismatch.
    flatbuffers::Verifier::Options envelopeOptions;
    envelopeOptions.check_nested_flatbuffers = false;
    flatbuffers::Verifier envelopeVerifier(data, size, envelopeOptions);
    if (!cellpack::VerifySizePrefixedArtifactBuffer(envelopeVerifier))
      return corrupt("corrupted: the artifact envelope fails FlatBuffers "
                     "verification");
    const cellpack::Artifact *envelope =
        cellpack::GetSizePrefixedArtifact(data);

    if (Status s = checkFormatVersion(envelope->format_version()); !s.isOk())
      return s;
    if (Status s = checkPayload(*envelope, data); !s.isOk())
      return s;

    artifact.envelope_ = envelope;
    artifact.model_ =
        flatbuffers::GetRoot<cellpack::Model>(envelope->payload()->data());
    return checkModelSemantics(*artifact.model_);
  }

  /// The file's size, its size prefix against the bytes that follow, and its
  /// file identifier (named first when the prefix is wrong too).
  static Status checkFraming(const uint8_t *data, size_t size) {
    if (size > kMaxFileBytes)
      return corrupt("too large for a cellpack: " + std::to_string(size) +
                     " bytes (at most 2 GiB)");
    if (size < 8)
      return corrupt("truncated: the file has " + std::to_string(size) +
                     " bytes, fewer than the 8 of a cellpack header");
    uint32_t prefix = flatbuffers::ReadScalar<uint32_t>(data);
    size_t following = size - sizeof(uint32_t);
    // Bytes 8..11 (after the size prefix and the root offset).
    bool hasIdentifierBytes = size >= 12;
    bool identifierMatches =
        hasIdentifierBytes &&
        cellpack::SizePrefixedArtifactBufferHasIdentifier(data);
    Status wrongIdentifier = corrupt(
        hasIdentifierBytes ? "not a cellpack: file identifier is '" +
                                 printableIdentifier(data + 8) + "'"
                           : "not a cellpack: the file is too short for a file "
                             "identifier");
    if (prefix != following) {
      // Any other file fails the prefix check too; "truncated" would
      // mislead there, so a wrong identifier is named first.
      if (hasIdentifierBytes && !identifierMatches)
        return wrongIdentifier;
      return corrupt(
          std::string(prefix > following ? "truncated" : "corrupted") +
          ": the size prefix says " + std::to_string(prefix) + " bytes but " +
          std::to_string(following) + " follow");
    }
    if (!identifierMatches)
      return wrongIdentifier;
    return Status::ok();
  }

  /// The envelope's format version against the one this cellrun reads.
  static Status checkFormatVersion(uint32_t version) {
    if (version > cellpack::kFormatVersion)
      return Status(StatusCode::Unsupported,
                    "format version " + std::to_string(version) +
                        " is newer than this cellrun reads (" +
                        std::to_string(cellpack::kFormatVersion) +
                        "); rebuild cellrun or recompile with a matching "
                        "cellc");
    if (version < cellpack::kFormatVersion)
      return Status(StatusCode::Unsupported,
                    "format version " + std::to_string(version) +
                        " is older than this cellrun reads (" +
                        std::to_string(cellpack::kFormatVersion) +
                        "); recompile the model with a matching cellc");
    return Status::ok();
  }

  /// The payload of a verified envelope: present, its checksum, the nested
  /// Model through the Verifier, and its alignment within the file `data`.
  static Status checkPayload(const cellpack::Artifact &envelope,
                             const uint8_t *data) {
    const flatbuffers::Vector<uint8_t> *payload = envelope.payload();
    if (!payload || payload->size() == 0)
      return corrupt("corrupted: the artifact has no payload");
    uint64_t computed = cellpack::checksum(payload->data(), payload->size());
    if (computed != envelope.checksum())
      return corrupt("payload checksum mismatch: the file is corrupted "
                     "(stored " +
                     hex64(envelope.checksum()) + ", computed " +
                     hex64(computed) + ")");

    flatbuffers::Verifier::Options modelOptions;
    modelOptions.max_depth = kMaxModelDepth;
    modelOptions.max_tables = kMaxModelTables;
    flatbuffers::Verifier modelVerifier(payload->data(), payload->size(),
                                        modelOptions);
    if (!modelVerifier.VerifyBuffer<cellpack::Model>(nullptr))
      return corrupt("corrupted: the model in the payload fails FlatBuffers "
                     "verification");
    // Weights and CUBINs are aligned relative to the payload's start.
    size_t payloadOffset = static_cast<size_t>(payload->data() - data);
    if (payloadOffset % kArtifactAlignment != 0)
      return corrupt("the payload is at offset " +
                     std::to_string(payloadOffset) + ", not a multiple of " +
                     std::to_string(kArtifactAlignment) +
                     " (force_align of the schema)");
    return Status::ok();
  }

  static void index(LoadedArtifact &artifact) {
    const cellpack::Model &model = *artifact.model_;
    for (const cellpack::CellType *cell : *model.cells())
      artifact.cellsByName_[cell->name()->string_view()] = cell;
    for (const cellpack::CellCode *code : *model.code())
      artifact
          .codeByCell_[artifact.cellsByName_.at(code->cell()->string_view())] =
          code;
  }
};

} // namespace detail

std::vector<const cellpack::CellType *> LoadedArtifact::cells() const {
  return {model_->cells()->begin(), model_->cells()->end()};
}

Result<const cellpack::CellType *>
LoadedArtifact::cell(std::string_view name) const {
  auto it = cellsByName_.find(name);
  if (it != cellsByName_.end())
    return it->second;
  std::string known;
  for (const cellpack::CellType *cell : *model_->cells())
    known += (known.empty() ? "'" : ", '") + cell->name()->str() + "'";
  return Status(StatusCode::NotFound, displayName_ + ": no cell '" +
                                          std::string(name) +
                                          "' (the cells are " + known + ")");
}

const cellpack::CellCode &
LoadedArtifact::code(const cellpack::CellType &cell) const {
  // The loader checked that every cell has exactly one code entry.
  auto it = codeByCell_.find(&cell);
  if (it == codeByCell_.end()) {
    std::fprintf(stderr,
                 "cellrun: LoadedArtifact::code: cell '%s' is not "
                 "from %s\n",
                 cell.name()->c_str(), displayName_.c_str());
    std::abort();
  }
  return *it->second;
}

std::vector<uint32_t>
LoadedArtifact::batchSizes(const cellpack::CellType &cell) const {
  std::vector<uint32_t> sizes;
  for (const cellpack::BatchPlan *plan : *cell.plans())
    sizes.push_back(plan->batch_size());
  return sizes;
}

Result<const cellpack::BatchPlan *>
LoadedArtifact::plan(const cellpack::CellType &cell, uint32_t batchSize) const {
  for (const cellpack::BatchPlan *plan : *cell.plans())
    if (plan->batch_size() == batchSize)
      return plan;
  return Status(StatusCode::NotFound, displayName_ + ": cell '" +
                                          cell.name()->str() +
                                          "' has no plan for batch size " +
                                          std::to_string(batchSize));
}

Result<const cellpack::BatchPlan *>
LoadedArtifact::smallestPlanAtLeast(const cellpack::CellType &cell,
                                    uint32_t rows) const {
  if (rows == 0)
    return Status(StatusCode::InvalidArgument,
                  displayName_ + ": cell '" + cell.name()->str() +
                      "': a task needs at least one row");
  // The plans are sorted by strictly increasing batch size (checked).
  for (const cellpack::BatchPlan *plan : *cell.plans())
    if (plan->batch_size() >= rows)
      return plan;
  return Status(
      StatusCode::OutOfRange,
      displayName_ + ": cell '" + cell.name()->str() + "': " +
          std::to_string(rows) + " rows exceed the largest batch size " +
          std::to_string(
              cell.plans()->Get(cell.plans()->size() - 1)->batch_size()));
}

Result<WeightView> LoadedArtifact::weight(const cellpack::CellType &cell,
                                          uint32_t index) const {
  uint32_t count = cell.weights() ? cell.weights()->size() : 0;
  if (index >= count)
    return Status(StatusCode::OutOfRange,
                  displayName_ + ": cell '" + cell.name()->str() +
                      "' has no weight " + std::to_string(index) + " (it has " +
                      std::to_string(count) + ")");
  const cellpack::Weight &weight = *cell.weights()->Get(index);
  WeightView view;
  view.name = weight.name()->string_view();
  view.dtype = weight.dtype();
  if (weight.shape())
    view.shape.assign(weight.shape()->begin(), weight.shape()->end());
  view.bytes = weight.data() ? weight.data()->size() : 0;
  view.data = view.bytes ? weight.data()->data() : nullptr;
  return view;
}

Result<std::shared_ptr<const LoadedArtifact>>
loadArtifact(const std::string &path) {
  try {
    Result<detail::AlignedBytes> bytes = detail::readWholeFile(path);
    if (!bytes.ok())
      return bytes.status();
    return detail::ArtifactLoader::load(std::move(bytes).value(), path);
  } catch (const std::bad_alloc &) {
    return Status(StatusCode::ResourceExhausted,
                  path + ": not enough memory to load the artifact");
  }
}

Result<std::shared_ptr<const LoadedArtifact>>
loadArtifactFromBytes(std::vector<uint8_t> bytes, std::string displayName) {
  try {
    detail::AlignedBytes aligned = detail::allocateAligned(bytes.size());
    if (!bytes.empty())
      std::memcpy(aligned.data.get(), bytes.data(), bytes.size());
    bytes = {}; // Give the unaligned copy back before checking.
    return detail::ArtifactLoader::load(std::move(aligned), displayName);
  } catch (const std::bad_alloc &) {
    return Status(StatusCode::ResourceExhausted,
                  displayName + ": not enough memory to load the artifact");
  }
}

} // namespace cellrun

uint32_t cellrun::supportedFormatVersion() { return cellpack::kFormatVersion; }
