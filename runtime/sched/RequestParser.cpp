//===- RequestParser.cpp - Requests from JSON, checked --------------------===//
#include "cellrun/RequestParser.h"
#include "UnfolderGuard.h"
#include "cellrun/RequestJson.h"

#include "ModelStructure.h"

#include "../backend/cpu/ElementIO.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <set>

using namespace cellrun;
using Json = nlohmann::json;

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

Result<std::unique_ptr<RequestParser>>
RequestParser::create(std::shared_ptr<const LoadedArtifact> artifact,
                      RequestLimits limits) {
  auto structure = analyzeModel(*artifact);
  if (!structure.ok())
    return structure.status();
  std::unique_ptr<RequestParser> parser(new RequestParser());
  parser->artifact_ = std::move(artifact);
  parser->structure_ =
      std::make_unique<ModelStructure>(std::move(structure).value());
  parser->limits_ = limits;
  ModelStructure &resolved = *parser->structure_;
  resolved.decodeLimit = std::min<int64_t>(resolved.maxDecodeLength,
                                           std::max(limits.maxSteps, 1u));
  if (resolved.kind == cellpack::Structure::Custom) {
    resolved.makeUnfolder = findUnfolder(resolved.unfolder);
    if (!resolved.makeUnfolder)
      return Status(StatusCode::Unsupported,
                    parser->artifact_->displayName() +
                        ": the model unfolds with '" + resolved.unfolder +
                        "', and no unfolder of that name is registered "
                        "(registerUnfolder)");
    parser->checker_ = resolved.makeUnfolder();
  }
  parser->signature_ = parser->makeSignature();
  // Tensor requests match inputs by name ("internal_<name>" beside a tree
  // leaf's own inputs): two of one name could never both be given.
  const std::vector<TensorDescription> &inputs = parser->signature_.inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t j = i + 1; j < inputs.size(); ++j)
      if (inputs[i].name == inputs[j].name)
        return Status(StatusCode::InvalidArgument,
                      parser->artifact_->displayName() +
                          ": two request inputs are named '" + inputs[i].name +
                          "' (a leaf input named like an internal cell's "
                          "input with the internal_ prefix); rename one");
  return parser;
}

RequestParser::~RequestParser() = default;

std::string RequestParser::decodeLimitText() const {
  std::string model = "the model's max_decode_length " +
                      std::to_string(structure_->maxDecodeLength);
  if (structure_->decodeLimit == structure_->maxDecodeLength)
    return model;
  return std::to_string(structure_->decodeLimit) + ", the server's step " +
         "limit (" + model + ")";
}

Result<Request> RequestParser::parse(std::string_view text,
                                     const std::string &fallbackId) const {
  auto json = parseRequestJson(text);
  if (!json.ok())
    return bad("request " + fallbackId,
               "not valid JSON: " + json.status().message());
  return fromJson(json.value(), fallbackId);
}

/// The request's "id" as a name: a string, or an integer in decimal; none
/// when it is anything else.
static std::optional<std::string> idOf(const Json &id) {
  if (id.is_string())
    return id.get<std::string>();
  if (auto integer = jsonInteger(id))
    return std::to_string(*integer);
  return std::nullopt;
}

std::string RequestParser::requestId(std::string_view text,
                                     const std::string &fallbackId) {
  auto json = parseRequestJson(text);
  if (!json.ok() || !json->is_object())
    return fallbackId;
  auto id = json->find("id");
  if (id == json->end())
    return fallbackId;
  return idOf(*id).value_or(fallbackId);
}

Result<NodeData> RequestParser::parseNode(const Json &json, uint32_t cell,
                                          const std::string &where) const {
  const CellRoles &roles = structure_->cells[cell];
  if (!json.is_object())
    return bad(where, "expected an object of input values, found " +
                          std::string(jsonKindName(json)));
  NodeData data;
  for (size_t d = 0; d < roles.dataInputs.size(); ++d) {
    const cellpack::TensorSpec &spec = *roles.dataSpecs[d];
    std::string name = spec.name()->str();
    auto value = json.find(name);
    if (value == json.end())
      return bad(where, "no value for input '" + name + "'");
    size_t elements = roles.dataRowBytes[d] / cpu::elementSize(spec.dtype());
    std::vector<const Json *> numbers;
    if (value->is_array())
      for (const Json &item : *value)
        numbers.push_back(&item);
    else
      numbers.push_back(&*value);
    if (numbers.size() != elements)
      return bad(where, "input '" + name + "' takes " +
                            std::to_string(elements) + " value(s), found " +
                            std::to_string(numbers.size()));
    std::vector<uint8_t> row(roles.dataRowBytes[d]);
    bool integral = !cpu::isFloatType(spec.dtype());
    for (size_t e = 0; e < elements; ++e) {
      const Json &number = *numbers[e];
      std::optional<int64_t> integer = jsonInteger(number);
      if (integral ? !integer : !number.is_number())
        return bad(where, "input '" + name + "' takes " +
                              (integral ? "integers" : "numbers") + ", found " +
                              jsonKindName(number));
      if (integral)
        cpu::storeInt(row.data(), spec.dtype(), e, *integer);
      else
        cpu::storeFloat(row.data(), spec.dtype(), e,
                        static_cast<float>(number.get<double>()));
    }
    data.push_back(std::move(row));
  }
  for (const auto &member : json.items()) {
    bool known = false;
    for (uint32_t input : roles.dataInputs)
      known |= roles.cell->inputs()->Get(input)->name()->str() == member.key();
    if (!known)
      return bad(where, "the cell '" + roles.cell->name()->str() +
                            "' has no request input '" + member.key() + "'");
  }
  return data;
}

/// "deadline_ms" into `request`, when there is one.
static Status parseDeadline(const Json &json, const std::string &where,
                            Request &request) {
  auto deadline = json.find("deadline_ms");
  if (deadline == json.end())
    return Status::ok();
  if (!deadline->is_number() || deadline->get<double>() < 0)
    return bad(where, "\"deadline_ms\" must be a number >= 0");
  request.deadlineMicros = deadline->get<double>() * 1000.0;
  return Status::ok();
}

Result<Request> RequestParser::fromJson(const Json &json,
                                        const std::string &fallbackId) const {
  Request request;
  request.id = fallbackId;
  if (!json.is_object())
    return bad("request " + fallbackId, "expected a JSON object");
  if (auto id = json.find("id"); id != json.end()) {
    std::optional<std::string> name = idOf(*id);
    if (!name)
      return bad("request " + fallbackId, "\"id\" must be a string or integer");
    request.id = *name;
  }
  std::string where = "request " + request.id;
  if (structure_->kind == cellpack::Structure::Custom) {
    if (Status status = parseDeadline(json, where, request); !status.isOk())
      return status;
    request.json = std::make_shared<const Json>(json);
    if (Status status = check(request); !status.isOk())
      return status;
    return request;
  }
  bool sequence = structure_->kind != cellpack::Structure::Tree;
  std::set<std::string> allowed = {"id", "deadline_ms"};
  if (sequence)
    allowed.insert({"tokens", "steps"});
  else
    allowed.insert({"nodes", "root"});
  if (structure_->kind == cellpack::Structure::Seq2Seq)
    allowed.insert("max_decode_length");
  for (const auto &member : json.items())
    if (!allowed.count(member.key()))
      return bad(where, "unknown member \"" + member.key() + "\"");
  if (Status status = parseDeadline(json, where, request); !status.isOk())
    return status;

  if (sequence) {
    const CellRoles &roles = structure_->cells[0];
    auto tokens = json.find("tokens");
    auto steps = json.find("steps");
    if ((tokens != json.end()) == (steps != json.end()))
      return bad(where, "give either \"tokens\" or \"steps\"");
    if (tokens != json.end()) {
      const cellpack::TensorSpec *spec =
          roles.dataInputs.size() == 1 ? roles.dataSpecs[0] : nullptr;
      if (!spec || cpu::isFloatType(spec->dtype()) ||
          roles.dataRowBytes[0] != cpu::elementSize(spec->dtype()))
        return bad(where, "the cell '" + roles.cell->name()->str() +
                              "' does not take one token a step; use "
                              "\"steps\"");
      if (!tokens->is_array())
        return bad(where, "\"tokens\" must be an array of integers");
      request.steps.reserve(tokens->size(), 1, roles.dataRowBytes[0]);
      for (size_t s = 0; s < tokens->size(); ++s) {
        std::optional<int64_t> token = jsonInteger((*tokens)[s]);
        if (!token)
          return bad(where,
                     "token " + std::to_string(s) + " is not an integer");
        cpu::storeInt(request.steps.appendRow(roles.dataRowBytes[0]),
                      spec->dtype(), 0, *token);
        request.steps.endStep();
      }
    } else {
      if (!steps->is_array())
        return bad(where, "\"steps\" must be an array of objects");
      for (size_t s = 0; s < steps->size(); ++s) {
        auto node =
            parseNode((*steps)[s], 0, where + ", step " + std::to_string(s));
        if (!node.ok())
          return node.status();
        request.steps.push_back(std::move(node).value());
      }
    }
    if (auto limit = json.find("max_decode_length"); limit != json.end()) {
      std::optional<int64_t> length = jsonInteger(*limit);
      if (!length || *length < 1 || *length > structure_->decodeLimit)
        return bad(where, "\"max_decode_length\" must be an integer from 1 "
                          "to " +
                              decodeLimitText());
      request.maxDecodeLength = *length;
    }
  } else {
    auto nodes = json.find("nodes");
    if (nodes == json.end() || !nodes->is_array())
      return bad(where, "a tree request needs \"nodes\", an array");
    for (size_t n = 0; n < nodes->size(); ++n) {
      const Json &node = (*nodes)[n];
      std::string at = where + ", node " + std::to_string(n);
      if (!node.is_object())
        return bad(at, "expected an object");
      TreeNode parsed;
      Json values = node;
      if (auto children = node.find("children"); children != node.end()) {
        if (!children->is_array())
          return bad(at, "\"children\" is an array of node indices");
        for (const Json &child : *children) {
          std::optional<int64_t> index = jsonInteger(child);
          if (!index || *index < 0 || *index > INT32_MAX)
            return bad(at, "children are node indices (integers >= 0)");
          parsed.children.push_back(static_cast<int32_t>(*index));
        }
        values.erase("children");
      }
      // A leaf carries the leaf cell's inputs; an internal node those of
      // the internal cell, if it has any.
      uint32_t cell = parsed.children.empty() ? 0 : 1;
      if (cell == 1 && structure_->cells[1].dataInputs.empty()) {
        if (!values.empty())
          return bad(at, "an internal node has only \"children\", an array "
                         "of node indices (the internal cell takes no "
                         "request inputs)");
      } else {
        auto data = parseTreeNode(values, cell, at);
        if (!data.ok())
          return data.status();
        parsed.data = std::move(data).value();
      }
      request.tree.push_back(std::move(parsed));
    }
    if (auto root = json.find("root"); root != json.end()) {
      std::optional<int64_t> index = jsonInteger(*root);
      if (!index || *index < 0 ||
          *index >= static_cast<int64_t>(request.tree.size()))
        return bad(where, "\"root\" must be the index of a node");
      request.root = static_cast<int32_t>(*index);
    }
  }
  if (Status status = check(request); !status.isOk())
    return status;
  return request;
}

Result<NodeData> RequestParser::parseTreeNode(const Json &values, uint32_t cell,
                                              const std::string &where) const {
  auto token = values.find("token");
  if (token == values.end())
    return parseNode(values, cell, where);
  // {"token": N}: the cell's one integer input, whatever its name.
  const CellRoles &roles = structure_->cells[cell];
  const cellpack::TensorSpec *spec =
      roles.dataInputs.size() == 1 ? roles.dataSpecs[0] : nullptr;
  if (!spec || cpu::isFloatType(spec->dtype()) ||
      roles.dataRowBytes[0] != cpu::elementSize(spec->dtype()) ||
      values.size() != 1)
    return bad(where, "{\"token\": N} fits " +
                          std::string(cell == 0 ? "leaf" : "internal") +
                          " cells with one integer request input only");
  std::optional<int64_t> value = jsonInteger(*token);
  if (!value)
    return bad(where, "the token is not an integer");
  std::vector<uint8_t> row(roles.dataRowBytes[0]);
  cpu::storeInt(row.data(), spec->dtype(), 0, *value);
  NodeData data;
  data.push_back(std::move(row));
  return data;
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
    if (static_cast<int32_t>(node.children.size()) != arity)
      return bad(at, "has " + std::to_string(node.children.size()) +
                         " children; the internal cell takes exactly " +
                         std::to_string(arity) + " (a child is missing or " +
                         "extra)");
    for (int32_t child : node.children) {
      if (child < 0 || static_cast<size_t>(child) >= count)
        return bad(at, "child " + std::to_string(child) +
                           " is not a node (there are " +
                           std::to_string(count) + ")");
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
  }
  int32_t root = request.root;
  if (root >= 0) {
    if (static_cast<size_t>(root) >= count)
      return bad(where, "the root " + std::to_string(root) + " is not a node");
    if (parent[root] >= 0)
      return bad(where, "the root " + std::to_string(root) +
                            " is a child of node " +
                            std::to_string(parent[root]));
  } else {
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
  }
  // Every node must be reachable from the root; since no node has two
  // parents, a node that is not lies on a cycle or under another root.
  std::vector<uint8_t> reached(count, 0);
  std::vector<int32_t> stack = {root};
  reached[root] = 1;
  while (!stack.empty()) {
    int32_t node = stack.back();
    stack.pop_back();
    for (int32_t child : request.tree[node].children)
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

Status RequestParser::check(const Request &request) const {
  std::string where = "request " + request.id;
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
