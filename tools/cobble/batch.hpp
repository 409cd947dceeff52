#pragma once

/// `cobble work create --batch FILE`: a file of workunits (JSON, or YAML, which reads JSON too)
/// read into the admin API's batch body (POST .../workunits, docs/admin-api.md). Input files it
/// names by path are staged first.

#include "tools/cobble/admin.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace cobble::cli {

/// A YAML document as JSON: maps as objects, sequences as arrays; a plain scalar that reads
/// as true/false, null, an integer or a finite number as that, anything else (and any quoted
/// scalar) as a string.
nlohmann::json yaml_to_json(const std::string& text);

/// The batch in `path`: a list of workunit specs, or `{"items": [...], "submitter": S}`. Each
/// input given as {"file": PATH, "open_name": NAME} (or the string "PATH[:NAME]") is staged
/// through `on` and replaced by what the server stored. A usage_error names the file, and the
/// line for a syntax error, when the file cannot be read or is no batch.
nlohmann::json read_batch(online& on, const std::string& path);

} // namespace cobble::cli
