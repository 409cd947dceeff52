#pragma once

/// Sizes and durations as written in the configuration file: "4MiB", "64M", "30s", "7d".
/// Shared by the YAML loader and by anything that takes the same notation elsewhere (flags).

#include <optional>
#include <string>
#include <string_view>

namespace cobble::config {

/// Parses a byte count: a number, optionally followed by a unit. Units (case-insensitive,
/// optional blank before them): B; K, KB, M, MB, G, GB, T, TB (powers of 1000); KiB, MiB,
/// GiB, TiB (powers of 1024). "1e8" is accepted. Returns nullopt on malformed or
/// non-finite text; the sign is the caller's business.
std::optional<double> parse_size(std::string_view text);

/// Parses a duration in seconds: a number, optionally followed by s, m, h or d (lower case).
/// A bare number is seconds. Returns nullopt on malformed or non-finite text.
std::optional<double> parse_duration(std::string_view text);

/// Formats a byte count so that parse_size() reads it back exactly: with the largest unit
/// that divides it ("4MiB", "64M"), the plain number otherwise.
std::string format_size(double bytes);

/// Formats seconds so that parse_duration() reads them back exactly: "7d", "5m", "30s",
/// "0.5s".
std::string format_duration(double seconds);

/// Formats a double in the shortest text that reads back to the same value.
std::string format_number(double value);

} // namespace cobble::config
