//===- ReferenceData.h - Reader of the example .ref files -------*- C++ -*-===//
//
// Header-only reader (standard library only) for the reference files that
// `examples/<model>/generate.py --reference` writes next to each
// `<cell>.onnx`: random inputs of the cell and the outputs PyTorch computes for
// them, at a few batch sizes. The runtime's correctness tests run a cell on the
// inputs and compare with the outputs.
//
// Format (little-endian; see examples/common/export_util.py):
//
//   magic "CREF", u32 version (= 1), u32 num_cases
//   per case:   u32 batch, u32 num_tensors
//     per tensor: u16 name_length, name bytes (the ONNX input/output name),
//                 u8 role (0 = input of the cell, 1 = output), u8 dtype
//                 (0 = float32, 4 = int64; the runtime's DType::F32 / I64),
//                 u8 rank, i64 dims[rank], then the data (row-major, packed)
//
// The inputs come first (ONNX input order), then the outputs (ONNX output
// order); nothing follows the last case.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_UNIT_REFERENCEDATA_H
#define CELLC_TEST_UNIT_REFERENCEDATA_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace cellc::testing {

/// dtype codes of the .ref format (the values of the runtime's DType enum).
enum : int { kRefF32 = 0, kRefI64 = 4 };

/// One tensor of a reference case. `data` holds numElements() packed elements
/// in host byte order (converted on big-endian hosts).
struct RefTensor {
  std::string name;
  bool isOutput = false;
  int dtype = kRefF32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;

  /// The elements as float / int64_t, or nullptr when the dtype differs (or
  /// the tensor is empty). The storage comes from operator new, so it is
  /// suitably aligned for either type.
  const float *f32() const {
    return dtype == kRefF32 && !data.empty()
               ? reinterpret_cast<const float *>(data.data())
               : nullptr;
  }
  const int64_t *i64() const {
    return dtype == kRefI64 && !data.empty()
               ? reinterpret_cast<const int64_t *>(data.data())
               : nullptr;
  }
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
};

/// One batch size: the cell's inputs, then its outputs.
struct RefCase {
  uint32_t batch = 0;
  std::vector<RefTensor> tensors;

  /// The input (isOutput = false) or output named `name`, or nullptr.
  const RefTensor *find(const std::string &name, bool isOutput) const {
    for (const RefTensor &t : tensors)
      if (t.isOutput == isOutput && t.name == name)
        return &t;
    return nullptr;
  }
};

/// The first `rows` rows of `source` (rows of a reference case are
/// independent, so this is a reference case of `rows` rows).
inline RefCase firstRows(const RefCase &source, uint32_t rows) {
  RefCase slice;
  slice.batch = rows;
  for (const RefTensor &tensor : source.tensors) {
    RefTensor part = tensor;
    size_t rowBytes = tensor.data.size() / source.batch;
    part.data.resize(rowBytes * rows);
    if (!part.dims.empty())
      part.dims[0] = rows;
    slice.tensors.push_back(std::move(part));
  }
  return slice;
}

namespace detail {

/// Bounds-checked little-endian cursor over the file's bytes.
class RefCursor {
public:
  RefCursor(const std::vector<uint8_t> &bytes) : bytes_(bytes) {}

  size_t offset() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }

  bool readBytes(size_t n, const uint8_t *&out) {
    if (n > remaining())
      return false;
    out = bytes_.data() + pos_;
    pos_ += n;
    return true;
  }
  template <typename T> bool readLE(T &out) {
    const uint8_t *p;
    if (!readBytes(sizeof(T), p))
      return false;
    // Assembled arithmetically, so independent of the host's byte order
    // (int64_t: two's complement).
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<uint64_t>(p[i]) << (8 * i);
    out = static_cast<T>(v);
    return true;
  }

  static bool hostIsLittleEndian() {
    const uint16_t one = 1;
    uint8_t b;
    std::memcpy(&b, &one, 1);
    return b == 1;
  }

private:
  const std::vector<uint8_t> &bytes_;
  size_t pos_ = 0;
};

inline bool readWholeFile(const std::string &path, std::vector<uint8_t> &bytes,
                          std::string &error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open";
    return false;
  }
  bytes.clear();
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    bytes.insert(bytes.end(), buf, buf + n);
  bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad) {
    error = path + ": read error";
    return false;
  }
  return true;
}

/// Writes the parser's one-line error messages into `error`: the file, what
/// is wrong and the cursor's offset at that moment. Both return false.
class RefParseErrors {
public:
  RefParseErrors(const std::string &path, const std::vector<uint8_t> &bytes,
                 const RefCursor &in, std::string &error)
      : path_(path), bytes_(bytes), in_(in), error_(error) {}

  bool fail(const std::string &what) const {
    error_ = path_ + ": " + what + " (at byte " + std::to_string(in_.offset()) +
             " of " + std::to_string(bytes_.size()) + ")";
    return false;
  }
  bool truncated(const std::string &what) const {
    return fail("truncated file: cannot read " + what);
  }

private:
  const std::string &path_;
  const std::vector<uint8_t> &bytes_;
  const RefCursor &in_;
  std::string &error_;
};

/// Reads the file header (magic, version) and the number of cases.
inline bool readRefHeader(RefCursor &in, const RefParseErrors &errors,
                          uint32_t &numCases) {
  const uint8_t *magic;
  if (!in.readBytes(4, magic))
    return errors.truncated("the magic");
  if (std::memcmp(magic, "CREF", 4) != 0)
    return errors.fail("bad magic (not a .ref file)");
  uint32_t version;
  if (!in.readLE(version))
    return errors.truncated("the version");
  if (version != 1)
    return errors.fail("unsupported version " + std::to_string(version));
  if (!in.readLE(numCases))
    return errors.truncated("the number of cases");
  // Each case takes at least 8 bytes: reject absurd counts before reserving.
  if (numCases > in.remaining() / 8)
    return errors.truncated(std::to_string(numCases) + " cases");
  return true;
}

/// The size of one element of `dtype`, or 0 when the dtype is unknown.
inline size_t refElementSize(uint8_t dtype) {
  if (dtype == kRefF32)
    return 4;
  if (dtype == kRefI64)
    return 8;
  return 0;
}

/// A tensor's element count, and whether it overflowed int64_t on the way.
struct RefElementCount {
  uint64_t count = 1;
  bool overflow = false;
};

/// Reads `rank` dimensions into `dims` (`tw` names the tensor) and counts the
/// elements, noting an overflow of int64_t.
inline bool readRefDims(RefCursor &in, const RefParseErrors &errors,
                        const std::string &tw, uint8_t rank,
                        std::vector<int64_t> &dims, RefElementCount &elements) {
  dims.resize(rank);
  for (uint8_t d = 0; d < rank; ++d) {
    if (!in.readLE(dims[d]))
      return errors.truncated(tw + " dims");
    if (dims[d] < 0)
      return errors.fail(tw + ": negative dimension " +
                         std::to_string(dims[d]));
    uint64_t dim = static_cast<uint64_t>(dims[d]);
    if (dim != 0 &&
        elements.count >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim)
      elements.overflow = true;
    else
      elements.count *= dim;
  }
  return true;
}

/// Reads `elements` elements of `elemSize` bytes into `data`, in host byte
/// order; the size checked against overflow and the bytes left.
inline bool readRefData(RefCursor &in, const RefParseErrors &errors,
                        const std::string &tw, RefElementCount elements,
                        size_t elemSize, std::vector<uint8_t> &data) {
  uint64_t count = elements.count;
  if (elements.overflow ||
      count > std::numeric_limits<uint64_t>::max() / elemSize)
    return errors.fail(tw + ": size mismatch: element count overflows");
  uint64_t size = count * elemSize;
  if (size > in.remaining())
    return errors.truncated(tw + " data (" + std::to_string(size) + " bytes)");
  const uint8_t *bytes;
  in.readBytes(static_cast<size_t>(size), bytes);
  data.assign(bytes, bytes + size);
  if (!RefCursor::hostIsLittleEndian())
    for (size_t i = 0; i < data.size(); i += elemSize)
      for (size_t a = i, b = i + elemSize - 1; a < b; ++a, --b)
        std::swap(data[a], data[b]);
  return true;
}

/// Reads one tensor (name, role, dtype, dims and data) into `rt`; `tw` names
/// it in error messages.
inline bool readRefTensor(RefCursor &in, const RefParseErrors &errors,
                          std::string tw, RefTensor &rt) {
  uint16_t nameLen;
  const uint8_t *name;
  if (!in.readLE(nameLen))
    return errors.truncated(tw + " name length");
  if (!in.readBytes(nameLen, name))
    return errors.truncated(tw + " name");
  rt.name.assign(reinterpret_cast<const char *>(name), nameLen);
  tw += " '" + rt.name + "'";
  uint8_t role, dtype, rank;
  if (!in.readLE(role) || !in.readLE(dtype) || !in.readLE(rank))
    return errors.truncated(tw + " role/dtype/rank");
  if (role > 1)
    return errors.fail(tw + ": bad role " + std::to_string(role));
  rt.isOutput = role == 1;
  size_t elemSize = refElementSize(dtype);
  if (elemSize == 0)
    return errors.fail(tw + ": unknown dtype " + std::to_string(dtype));
  rt.dtype = dtype;

  // The element count, checked against overflow and the bytes left.
  RefElementCount elements;
  if (!readRefDims(in, errors, tw, rank, rt.dims, elements))
    return false;
  return readRefData(in, errors, tw, elements, elemSize, rt.data);
}

/// Reads case number `c` (its batch size, then its tensors) into `rc`.
inline bool readRefCase(RefCursor &in, const RefParseErrors &errors, uint32_t c,
                        RefCase &rc) {
  const std::string where = "case " + std::to_string(c);
  uint32_t numTensors;
  if (!in.readLE(rc.batch))
    return errors.truncated(where + " batch");
  if (!in.readLE(numTensors))
    return errors.truncated(where + " tensor count");
  // Each tensor takes at least 5 bytes (u16 name length, role, dtype, rank).
  if (numTensors > in.remaining() / 5)
    return errors.truncated(where + ": " + std::to_string(numTensors) +
                            " tensors");
  rc.tensors.reserve(numTensors);

  for (uint32_t t = 0; t < numTensors; ++t) {
    RefTensor rt;
    if (!readRefTensor(in, errors, where + " tensor " + std::to_string(t), rt))
      return false;
    rc.tensors.push_back(std::move(rt));
  }
  return true;
}

/// Parses the bytes of the .ref file `path` into `cases` (appended); on error
/// sets `error` and returns false.
inline bool parseReference(const std::string &path,
                           const std::vector<uint8_t> &bytes,
                           std::vector<RefCase> &cases, std::string &error) {
  RefCursor in(bytes);
  RefParseErrors errors(path, bytes, in, error);
  uint32_t numCases;
  if (!readRefHeader(in, errors, numCases))
    return false;
  cases.reserve(numCases);

  for (uint32_t c = 0; c < numCases; ++c) {
    RefCase rc;
    if (!readRefCase(in, errors, c, rc))
      return false;
    cases.push_back(std::move(rc));
  }
  if (in.remaining() != 0)
    return errors.fail("size mismatch: " + std::to_string(in.remaining()) +
                       " bytes after the last case");
  return true;
}

} // namespace detail

/// Reads a .ref file into `cases` (replacing its contents). On error returns
/// false, leaves `cases` empty and sets `error` to a one-line message naming
/// the file (cannot open, truncated file, bad magic/version, unknown dtype or
/// role, size mismatch). Never throws, never reads out of bounds.
inline bool readReference(const std::string &path, std::vector<RefCase> &cases,
                          std::string &error) {
  cases.clear();
  try {
    std::vector<uint8_t> bytes;
    if (!detail::readWholeFile(path, bytes, error))
      return false;
    if (!detail::parseReference(path, bytes, cases, error)) {
      cases.clear();
      return false;
    }
    return true;
  } catch (...) { // std::bad_alloc
    cases.clear();
    error = path + ": out of memory";
    return false;
  }
}

} // namespace cellc::testing

#endif // CELLC_TEST_UNIT_REFERENCEDATA_H
