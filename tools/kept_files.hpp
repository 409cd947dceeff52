#pragma once

/// Small files cobbled keeps in its data directory: secrets (the admin token, the upload
/// secret) and the demo's code-signing keys. Blocking file I/O for the main thread at start,
/// never for an Asio thread or an actor handler.

#include <filesystem>
#include <optional>
#include <string>

#include <sys/types.h>

namespace cobble::tools {

/// `bytes` random bytes from OpenSSL's generator, as lowercase hex.
std::string random_hex(std::size_t bytes);

/// The first line of `path`, if the file exists and that line is not empty.
std::optional<std::string> read_secret(const std::filesystem::path& path);

/// The whole content of `path`, if it is a regular file that can be read.
std::optional<std::string> read_whole(const std::filesystem::path& path);

/// Writes `content` to `path` with permissions `mode`: to a temporary file, synced, renamed into
/// place and the directory synced, so that a reader (or a crash) never sees an empty or
/// half-written file. Throws std::runtime_error that names the file and the cause.
void write_durably(const std::filesystem::path& path, const std::string& content, mode_t mode);

/// A secret kept in a 0600 file of the data directory, created on first use (durably: a crash
/// never leaves events that relied on it next to an empty or missing file).
std::string kept_secret(const std::filesystem::path& path);

} // namespace cobble::tools
