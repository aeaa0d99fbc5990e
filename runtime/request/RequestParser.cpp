//===- RequestParser.cpp - Requests from JSON -----------------------------===//
//
// The parser's making, and requests from JSON lines into Requests; the
// checks every request then passes are in RequestChecks.cpp.
//
//===----------------------------------------------------------------------===//
#include "cellrun/RequestParser.h"
#include "cellrun/RequestJson.h"
#include "request/UnfolderGuard.h"

#include "request/ModelStructure.h"

#include "artifact/ElementIO.h"

#include <optional>
#include <set>

using namespace cellrun;
using Json = nlohmann::json;

static Status bad(const std::string &where, const std::string &what) {
  return Status(StatusCode::InvalidArgument, where + ": " + what);
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
  return parse(text, fallbackId, parseRequestJson);
}

Result<Request> RequestParser::parse(std::string_view text,
                                     const std::string &fallbackId,
                                     JsonReader read) const {
  auto json = read(text);
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

/// An error naming `where` when `json` has a member that requests of a
/// `kind` model do not take.
static Status checkMemberNames(const Json &json, cellpack::Structure kind,
                               const std::string &where) {
  bool sequence = kind != cellpack::Structure::Tree;
  std::set<std::string> allowed = {"id", "deadline_ms"};
  if (sequence)
    allowed.insert({"tokens", "steps"});
  else
    allowed.insert({"nodes", "root"});
  if (kind == cellpack::Structure::Seq2Seq)
    allowed.insert("max_decode_length");
  for (const auto &member : json.items())
    if (!allowed.count(member.key()))
      return bad(where, "unknown member \"" + member.key() + "\"");
  return Status::ok();
}

/// "tokens" into `steps`: one integer a step, for a cell whose one request
/// input is one integer.
static Status parseTokens(const Json &tokens, const CellRoles &roles,
                          const std::string &where, StepRows &steps) {
  const cellpack::TensorSpec *spec =
      roles.dataInputs.size() == 1 ? roles.dataSpecs[0] : nullptr;
  if (!spec || cpu::isFloatType(spec->dtype()) ||
      roles.dataRowBytes[0] != cpu::elementSize(spec->dtype()))
    return bad(where, "the cell '" + roles.cell->name()->str() +
                          "' does not take one token a step; use "
                          "\"steps\"");
  if (!tokens.is_array())
    return bad(where, "\"tokens\" must be an array of integers");
  steps.reserve(tokens.size(), 1, roles.dataRowBytes[0]);
  for (size_t s = 0; s < tokens.size(); ++s) {
    std::optional<int64_t> token = jsonInteger(tokens[s]);
    if (!token)
      return bad(where, "token " + std::to_string(s) + " is not an integer");
    cpu::storeInt(steps.appendRow(roles.dataRowBytes[0]), spec->dtype(), 0,
                  *token);
    steps.endStep();
  }
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
  if (Status status = checkMemberNames(json, structure_->kind, where);
      !status.isOk())
    return status;
  if (Status status = parseDeadline(json, where, request); !status.isOk())
    return status;
  Status parsed = structure_->kind != cellpack::Structure::Tree
                      ? parseSequence(json, where, request)
                      : parseTree(json, where, request);
  if (!parsed.isOk())
    return parsed;
  if (Status status = check(request); !status.isOk())
    return status;
  return request;
}

Status RequestParser::parseSequence(const Json &json, const std::string &where,
                                    Request &request) const {
  auto tokens = json.find("tokens");
  auto steps = json.find("steps");
  if ((tokens != json.end()) == (steps != json.end()))
    return bad(where, "give either \"tokens\" or \"steps\"");
  if (tokens != json.end()) {
    if (Status status =
            parseTokens(*tokens, structure_->cells[0], where, request.steps);
        !status.isOk())
      return status;
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
  return Status::ok();
}

/// A tree node's "children" into `children`: node indices.
static Status parseChildren(const Json &list, const std::string &at,
                            std::vector<int32_t> &children) {
  if (!list.is_array())
    return bad(at, "\"children\" is an array of node indices");
  for (const Json &child : list) {
    std::optional<int64_t> index = jsonInteger(child);
    if (!index || *index < 0 || *index > INT32_MAX)
      return bad(at, "children are node indices (integers >= 0)");
    children.push_back(static_cast<int32_t>(*index));
  }
  return Status::ok();
}

/// "root", when there is one, into `request`: the index of a node.
static Status parseRoot(const Json &json, const std::string &where,
                        Request &request) {
  if (auto root = json.find("root"); root != json.end()) {
    std::optional<int64_t> index = jsonInteger(*root);
    if (!index || *index < 0 ||
        *index >= static_cast<int64_t>(request.tree.size()))
      return bad(where, "\"root\" must be the index of a node");
    request.root = static_cast<int32_t>(*index);
  }
  return Status::ok();
}

Status RequestParser::parseTree(const Json &json, const std::string &where,
                                Request &request) const {
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
      if (Status status = parseChildren(*children, at, parsed.children);
          !status.isOk())
        return status;
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
  return parseRoot(json, where, request);
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
