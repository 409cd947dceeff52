#include "tools/cobble/batch.hpp"

#include "tools/cobble/commands.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace cobble::cli {

using nlohmann::json;

namespace {

json scalar_to_json(const YAML::Node& n) {
  const auto& text = n.Scalar();
  if (n.Tag() == "!") // quoted: a string, whatever it reads as
    return text;
  if (text == "true" || text == "True")
    return true;
  if (text == "false" || text == "False")
    return false;
  if (text == "null" || text == "~" || text.empty())
    return nullptr;
  std::int64_t i = 0;
  const auto* end = text.data() + text.size();
  if (auto [p, ec] = std::from_chars(text.data(), end, i); ec == std::errc{} && p == end)
    return i;
  char* stop = nullptr;
  double d = std::strtod(text.c_str(), &stop);
  if (stop == text.c_str() + text.size() && std::isfinite(d))
    return d;
  return text;
}

json node_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : n)
        out[kv.first.as<std::string>()] = node_to_json(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& x : n)
        out.push_back(node_to_json(x));
      return out;
    }
    case YAML::NodeType::Scalar:
      return scalar_to_json(n);
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

/// An input of a batch item with the file it names staged: what the API takes.
json staged_input(online& on, const json& in, const std::string& where) {
  std::string spec;
  if (in.is_string()) {
    spec = in.get<std::string>();
  } else if (in.is_object() && in.contains("file")) {
    if (!in.at("file").is_string())
      throw usage_error(where + ": \"file\" must be a path");
    spec = in.at("file").get<std::string>();
    if (in.contains("open_name"))
      spec += ":" + in.at("open_name").get<std::string>();
  } else {
    return in; // already staged (stored_name), as the API takes it
  }
  auto staged = stage_inputs(on, {spec});
  const auto& s = staged.front();
  return json{{"stored_name", s.stored_name},
              {"open_name", s.open_name},
              {"nbytes", s.nbytes},
              {"md5", s.md5}};
}

} // namespace

json yaml_to_json(const std::string& text) {
  return node_to_json(YAML::Load(text));
}

json read_batch(online& on, const std::string& path) {
  auto text = read_file(path, "batch file");
  json doc;
  try {
    doc = yaml_to_json(text);
  } catch (const YAML::Exception& e) {
    auto line = e.mark.is_null() ? std::string{} : ":" + std::to_string(e.mark.line + 1);
    throw usage_error("batch file " + path + line + ": " + e.msg);
  }
  json body = doc.is_array() ? json{{"items", doc}} : doc;
  if (!body.is_object() || !body.contains("items") || !body.at("items").is_array()
      || body.at("items").empty())
    throw usage_error("batch file " + path
                      + ": give a list of workunits, or {items: [...], submitter: NAME}");
  auto& items = body.at("items");
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto& item = items[i];
    auto where = "batch file " + path + ": item " + std::to_string(i + 1);
    if (!item.is_object())
      throw usage_error(where + " is no workunit (a map of its fields)");
    if (item.contains("inputs") && item.at("inputs").is_array())
      for (auto& in : item.at("inputs"))
        in = staged_input(on, in, where);
  }
  if (!body.contains("submitter"))
    body["submitter"] = "cobble-cli";
  return body;
}

} // namespace cobble::cli
