#pragma once

/// How `cobble` prints: aligned tables, JSON values as short text, times in UTC, and the
/// views more than one command shows (a project's summary: `status` and `log replay`).

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace cobble::cli {

/// A table printed with aligned columns.
class table {
public:
  /// A table whose first row is `header`.
  explicit table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

  /// Appends a row.
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  /// Prints every row, each line after `indent`, each column two spaces wider than its widest
  /// cell (the last one not padded).
  void print(std::ostream& out, const std::string& indent = "") const;

private:
  std::vector<std::vector<std::string>> rows_;
};

/// A JSON value as short text: strings bare, null as "-", numbers compact.
std::string text(const nlohmann::json& x);

/// A member as text ("-" when absent or null).
std::string field(const nlohmann::json& obj, const char* key);

/// Unix seconds as "2024-05-01 12:00:00Z"; "-" for null.
std::string time_text(const nlohmann::json& x);

/// A member holding Unix seconds as time_text ("-" when absent).
std::string time_field(const nlohmann::json& obj, const char* key);

/// `x` on stdout, indented (what --json prints).
void print_json(const nlohmann::json& x);

/// A project's summary: counts, counters and apps (`status`, `log replay`).
void print_summary(std::ostream& out, const nlohmann::json& s);

} // namespace cobble::cli
