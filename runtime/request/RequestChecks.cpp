//===- RequestChecks.cpp - The checks of a request ------------------------===//
//
// Every check a request passes before it runs, whether it came from JSON,
// tensors or C++: the deadline, the step and node limits, each row's size,
// finite floats and tokens inside the vocabulary, and the shape of a tree.
//
//===----------------------------------------------------------------------===//
#include "cellrun/RequestParser.h"
#include "request/UnfolderGuard.h"

#include "request/ModelStructure.h"

#include "artifact/ElementIO.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace cellrun;

static Status bad(const std::string &where, const std::string &what) {
  return Status(StatusCode::InvalidArgument, where + ": " + what);
}

/// InvalidArgument naming `input` when a float of the row is NaN or
/// infinite.
static Status checkFinite(const uint8_t *bytes, size_t size,
                          cellpack::DType type, const std::string &input) {
  size_t elements = size / cpu::elementSize(type);
  bool finite = true;
  if (type == cellpack::DType::F32) {
    for (size_t e = 0; e < elements; ++e) {
      float value;
      std::memcpy(&value, bytes + e * sizeof value, sizeof value);
      finite &= std::isfinite(value);
    }
  } else {
    for (size_t e = 0; e < elements; ++e)
      finite &= std::isfinite(cpu::loadFloat(bytes, type, e));
  }
  if (finite)
    return Status::ok();
  for (size_t e = 0; e < elements; ++e)
    if (!std::isfinite(cpu::loadFloat(bytes, type, e)))
      return Status(StatusCode::InvalidArgument,
                    "input '" + input + "' has " +
                        (std::isnan(cpu::loadFloat(bytes, type, e))
                             ? "a NaN"
                             : "an infinite value") +
                        " (element " + std::to_string(e) +
                        "; the server takes them only with "
                        "--allow-non-finite)");
  return Status::ok();
}

Status RequestParser::checkRows(const std::vector<RowView> &rows, uint32_t cell,
                                const std::string &where, int64_t step) const {
  const CellRoles &roles = structure_->cells[cell];
  auto at = [&] {
    return step < 0 ? where : where + ", step " + std::to_string(step);
  };
  if (rows.size() != roles.dataInputs.size())
    return bad(at(), "the cell '" + roles.cell->name()->str() + "' takes " +
                         std::to_string(roles.dataInputs.size()) +
                         " request input(s), found " +
                         std::to_string(rows.size()));
  auto name = [&](size_t d) { return roles.dataSpecs[d]->name()->str(); };
  for (size_t d = 0; d < rows.size(); ++d) {
    if (rows[d].size != roles.dataRowBytes[d])
      return bad(at(), "input '" + name(d) + "' has " +
                           std::to_string(rows[d].size) + " bytes, not " +
                           std::to_string(roles.dataRowBytes[d]));
    int64_t limit = roles.dataLimits[d];
    cellpack::DType type = roles.dataTypes[d];
    if (cpu::isFloatType(type)) {
      if (limits_.allowNonFinite)
        continue;
      if (Status status =
              checkFinite(rows[d].bytes, rows[d].size, type, name(d));
          !status.isOk())
        return bad(at(), status.message());
      continue;
    }
    if (limit <= 0)
      continue;
    size_t elements = rows[d].size / cpu::elementSize(type);
    for (size_t e = 0; e < elements; ++e) {
      int64_t value;
      if (type == cellpack::DType::I64)
        std::memcpy(&value, rows[d].bytes + e * sizeof value, sizeof value);
      else
        value = cpu::loadInt(rows[d].bytes, type, e);
      if (value < 0 || value >= limit)
        return bad(at(), "token " + std::to_string(value) + " of input '" +
                             name(d) + "' is outside the vocabulary (0.." +
                             std::to_string(limit - 1) + ")");
    }
  }
  return Status::ok();
}

Status RequestParser::checkUniformSteps(const StepRows &steps,
                                        const std::string &where) const {
  // The first step's rows are every step's: their count and sizes once,
  // then the tokens of every step straight from the buffer.
  std::vector<RowView> first;
  for (size_t d = 0; d < steps.rows(0); ++d)
    first.push_back({steps.row(0, d), steps.rowSize(0, d)});
  if (Status status = checkRows(first, 0, where, 0); !status.isOk())
    return status;
  const CellRoles &roles = structure_->cells[0];
  for (size_t d = 0; d < roles.dataInputs.size(); ++d) {
    int64_t limit = roles.dataLimits[d];
    if (cpu::isFloatType(roles.dataTypes[d])) {
      if (limits_.allowNonFinite)
        continue;
      std::string name = roles.dataSpecs[d]->name()->str();
      for (size_t s = 1; s < steps.size(); ++s)
        if (Status status = checkFinite(steps.row(s, d), steps.rowSize(s, d),
                                        roles.dataTypes[d], name);
            !status.isOk())
          return bad(where + ", step " + std::to_string(s), status.message());
      continue;
    }
    if (limit <= 0)
      continue;
    bool outside = false;
    if (roles.dataTypes[d] == cellpack::DType::I64 &&
        roles.dataRowBytes[d] == sizeof(int64_t)) {
      for (size_t s = 1; s < steps.size(); ++s) {
        int64_t token;
        std::memcpy(&token, steps.row(s, d), sizeof token);
        outside |= token < 0 || token >= limit;
      }
    } else {
      outside = steps.size() > 1;
    }
    if (!outside)
      continue;
    // The first step that is out of range says so (every row's size is
    // right, being the first's).
    std::vector<RowView> rows(first.size());
    for (size_t s = 1; s < steps.size(); ++s) {
      for (size_t r = 0; r < rows.size(); ++r)
        rows[r] = {steps.row(s, r), steps.rowSize(s, r)};
      if (Status status = checkRows(rows, 0, where, static_cast<int64_t>(s));
          !status.isOk())
        return status;
    }
  }
  return Status::ok();
}

Status RequestParser::checkNode(const NodeData &data, uint32_t cell,
                                const std::string &where) const {
  std::vector<RowView> rows;
  for (const std::vector<uint8_t> &row : data)
    rows.push_back({row.data(), row.size()});
  return checkRows(rows, cell, where, -1);
}

/// Checks the children of internal node `n` (of `count` nodes): `arity`
/// of them, each a node other than `n` with no other parent, and records
/// `n` as their parent.
static Status linkChildren(const TreeNode &node, size_t n, size_t count,
                           int32_t arity, const std::string &at,
                           std::vector<int32_t> &parent) {
  if (static_cast<int32_t>(node.children.size()) != arity)
    return bad(at, "has " + std::to_string(node.children.size()) +
                       " children; the internal cell takes exactly " +
                       std::to_string(arity) + " (a child is missing or " +
                       "extra)");
  for (int32_t child : node.children) {
    if (child < 0 || static_cast<size_t>(child) >= count)
      return bad(at, "child " + std::to_string(child) +
                         " is not a node (there are " + std::to_string(count) +
                         ")");
    if (static_cast<size_t>(child) == n)
      return bad(at, "is its own child (a cycle)");
    if (parent[child] >= 0)
      return bad(at, "duplicate child: node " + std::to_string(child) +
                         (parent[child] == static_cast<int32_t>(n)
                              ? " appears twice among its children"
                              : " is already a child of node " +
                                    std::to_string(parent[child])));
    parent[child] = static_cast<int32_t>(n);
  }
  return Status::ok();
}

/// The tree's root into `root`: the request's "root", which must be a node
/// without a parent, or else the one node without a parent.
static Status findRoot(int32_t requested, const std::vector<int32_t> &parent,
                       const std::string &where, int32_t &root) {
  size_t count = parent.size();
  root = requested;
  if (root >= 0) {
    if (static_cast<size_t>(root) >= count)
      return bad(where, "the root " + std::to_string(root) + " is not a node");
    if (parent[root] >= 0)
      return bad(where, "the root " + std::to_string(root) +
                            " is a child of node " +
                            std::to_string(parent[root]));
    return Status::ok();
  }
  std::vector<int32_t> roots;
  for (size_t n = 0; n < count; ++n)
    if (parent[n] < 0)
      roots.push_back(static_cast<int32_t>(n));
  if (roots.empty())
    return bad(where, "the nodes form a cycle (every node has a parent)");
  if (roots.size() > 1)
    return bad(where, "the tree has " + std::to_string(roots.size()) +
                          " roots (nodes " + std::to_string(roots[0]) +
                          " and " + std::to_string(roots[1]) +
                          "); give \"root\" or connect them");
  root = roots[0];
  return Status::ok();
}

/// Every node must be reachable from the root; since no node has two
/// parents, a node that is not lies on a cycle or under another root.
static Status checkReachable(const std::vector<TreeNode> &tree,
                             const std::vector<int32_t> &parent, int32_t root,
                             const std::string &where) {
  size_t count = tree.size();
  std::vector<uint8_t> reached(count, 0);
  std::vector<int32_t> stack = {root};
  reached[root] = 1;
  while (!stack.empty()) {
    int32_t node = stack.back();
    stack.pop_back();
    for (int32_t child : tree[node].children)
      if (!reached[child]) {
        reached[child] = 1;
        stack.push_back(child);
      }
  }
  for (size_t n = 0; n < count; ++n) {
    if (reached[n])
      continue;
    std::vector<uint8_t> seen(count, 0);
    int32_t at = static_cast<int32_t>(n);
    while (at >= 0 && !seen[at]) {
      seen[at] = 1;
      at = parent[at];
    }
    if (at >= 0)
      return bad(where, "cycle: node " + std::to_string(at) +
                            " is its own descendant");
    return bad(where, "node " + std::to_string(n) +
                          " is not reachable from the root " +
                          std::to_string(root));
  }
  return Status::ok();
}

Status RequestParser::checkTree(const Request &request) const {
  std::string where = "request " + request.id;
  size_t count = request.tree.size();
  if (count == 0)
    return bad(where, "the tree has no nodes");
  if (count > limits_.maxTreeNodes)
    return bad(where, "the tree has " + std::to_string(count) +
                          " nodes, more than the limit of " +
                          std::to_string(limits_.maxTreeNodes));
  int32_t arity = structure_->arity;
  std::vector<int32_t> parent(count, -1);
  for (size_t n = 0; n < count; ++n) {
    const TreeNode &node = request.tree[n];
    std::string at = where + ", node " + std::to_string(n);
    if (node.children.empty()) {
      if (Status status = checkNode(node.data, 0, at); !status.isOk())
        return status;
      continue;
    }
    if (Status status = checkNode(node.data, 1, at); !status.isOk())
      return status;
    if (Status status = linkChildren(node, n, count, arity, at, parent);
        !status.isOk())
      return status;
  }
  int32_t root;
  if (Status status = findRoot(request.root, parent, where, root);
      !status.isOk())
    return status;
  return checkReachable(request.tree, parent, root, where);
}

Status RequestParser::checkOutputNames(const std::vector<std::string> &names,
                                       const std::string &where) const {
  const std::vector<TensorDescription> &outputs = signature_.outputs;
  for (size_t n = 0; n < names.size(); ++n) {
    bool known = std::any_of(outputs.begin(), outputs.end(),
                             [&](const TensorDescription &output) {
                               return output.name == names[n];
                             });
    if (known && std::find(names.begin(), names.begin() + n, names[n]) ==
                     names.begin() + n)
      continue;
    std::string all;
    for (const TensorDescription &output : outputs)
      all += (all.empty() ? "" : ", ") + output.name;
    return bad(where, "output '" + names[n] +
                          "' is unknown or asked for twice (the model has " +
                          all + ")");
  }
  return Status::ok();
}

Status RequestParser::check(const Request &request) const {
  std::string where = "request " + request.id;
  if (Status named = checkOutputNames(request.outputs, where); !named.isOk())
    return named;
  // A day at most: a latency goal, and a time the clock can hold.
  constexpr double kMaxDeadlineMicros = 86400e6;
  if (!(std::isfinite(request.deadlineMicros) && request.deadlineMicros >= 0 &&
        request.deadlineMicros <= kMaxDeadlineMicros))
    return bad(where, "deadline_ms must be a number from 0 to 86400000 "
                      "(a day)");
  if (request.session.id != 0 && structure_->kind != cellpack::Structure::Chain)
    return bad(where, "streaming sessions (sequence_id) need a chain model");
  if (structure_->kind == cellpack::Structure::Custom) {
    if (!request.json)
      return bad(where, "a request of a custom model carries its JSON");
    Status status =
        callUnfolder([&] { return checker_->check(*request.json); });
    return status.isOk() ? status : bad(where, status.message());
  }
  if (structure_->kind == cellpack::Structure::Tree)
    return checkTree(request);
  if (request.steps.empty())
    return bad(where, "empty sequence: at least one step is needed");
  if (request.steps.size() > limits_.maxSteps)
    return bad(where, std::to_string(request.steps.size()) +
                          " steps, longer than the limit of " +
                          std::to_string(limits_.maxSteps));
  if (structure_->memoryPositions != 0 &&
      request.steps.size() > structure_->memoryPositions)
    return bad(where, std::to_string(request.steps.size()) +
                          " source steps, but the decoder attends over at "
                          "most " +
                          std::to_string(structure_->memoryPositions) +
                          " (the positions of its memory)");
  if (request.steps.uniform()) {
    if (Status status = checkUniformSteps(request.steps, where); !status.isOk())
      return status;
  } else {
    std::vector<RowView> rows;
    for (size_t s = 0; s < request.steps.size(); ++s) {
      rows.resize(request.steps.rows(s));
      for (size_t d = 0; d < rows.size(); ++d)
        rows[d] = {request.steps.row(s, d), request.steps.rowSize(s, d)};
      if (Status status = checkRows(rows, 0, where, static_cast<int64_t>(s));
          !status.isOk())
        return status;
    }
  }
  if (request.maxDecodeLength < 0 ||
      request.maxDecodeLength > structure_->decodeLimit)
    return bad(where, "max decode length " +
                          std::to_string(request.maxDecodeLength) +
                          " is beyond " + decodeLimitText());
  return Status::ok();
}
