#pragma once

/// Where the tools find cobbled's admin API: cobbled writes the base URL of its admin listener
/// to <data_dir>/admin_url at every start (docs/admin-api.md).

#include <filesystem>
#include <optional>
#include <string>

namespace cobble::common {

/// The admin API of a cobbled with the default server.admin_address and server.admin_port.
inline constexpr const char* default_admin_url = "http://127.0.0.1:8081";

/// The name of the file in the data directory.
inline constexpr const char* admin_url_file = "admin_url";

/// The URL in `<data_dir>/admin_url`; nullopt when the file is absent or empty (no cobbled
/// with an admin listener of its own has started on that directory yet).
std::optional<std::string> read_admin_url(const std::filesystem::path& data_dir);

} // namespace cobble::common
