#pragma once

/// The files of a project on disk: staged inputs (content-addressed, stored once), uploaded
/// outputs (resumable), and the outputs the assimilation hook keeps. Plain blocking file
/// I/O: callers run it off the Asio threads and outside cooperative actor handlers (the edge
/// uses a thread pool, the assimilator is a detached actor).
///
/// Layout under the data directory:
///   projects/<project>/download/<name>   inputs; name = "in_<md5>" (or a name given at staging)
///   projects/<project>/upload/<name>     outputs, as uploaded ("<result name>_<i>")
///   projects/<project>/results/<wu>/...  the canonical outputs of assimilated workunits
///
/// Errors are storage errors (storage/error.hpp), as the event store's are: ec::io_error whose
/// context names the operation and the file ("write <path>: No space left on device", from the
/// POSIX helpers of storage/posix_file.hpp), ec::not_found, ec::invalid_argument (an unsafe
/// name) and ec::corruption (content whose md5 is not the one reported).

#include "storage/posix_file.hpp"

#include <caf/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace cobble::storage {

/// A staged input file.
struct staged_file {
  std::string name; ///< Name in the download area.
  std::string md5;  ///< Hex MD5 of the content.
  std::uint64_t nbytes = 0;
  bool existed = false; ///< Identical content was already staged.
};

/// The result of a write at an offset.
struct upload_progress {
  std::uint64_t size = 0; ///< Bytes stored after the write.
  /// Hex MD5 of the whole file after the write, when asked for (the server's own digest of
  /// an output, never the one a client reports).
  std::optional<std::string> md5;
};

/// True for names that stay inside one directory: non-empty, at most 255 bytes, no '/', '\\',
/// "..", control characters or a leading '.'.
bool safe_file_name(std::string_view name);

/// Hex MD5 of bytes.
std::string md5_hex(std::string_view bytes);

/// Hex MD5 of a file; nullopt when it cannot be read.
std::optional<std::string> md5_of_file(const std::filesystem::path& file);

/// An output being uploaded, written in pieces as they arrive and hashed as it is written (the
/// server's digest needs no second read). Blocking I/O; one thread at a time.
class output_writer {
public:
  output_writer(output_writer&&) noexcept;
  output_writer& operator=(output_writer&&) noexcept;
  ~output_writer();

  /// Appends `data` (not yet flushed). ec::io_error on failure.
  caf::error append(std::string_view data);

  /// Flushes what was written to disk: a cut upload keeps it for the client to resume from.
  caf::error sync();

  /// Flushes and returns the size and the MD5 of the whole file.
  caf::expected<upload_progress> finish();

  /// Bytes of the file (the prefix it was opened at plus what was appended).
  std::uint64_t size() const { return size_; }

private:
  friend class file_store;
  struct digest;
  output_writer(unique_fd fd, std::filesystem::path path, std::unique_ptr<digest> md5,
                std::uint64_t size);

  unique_fd fd_;
  std::filesystem::path path_;
  std::unique_ptr<digest> md5_;
  std::uint64_t size_ = 0;
};

class file_store {
public:
  explicit file_store(std::filesystem::path data_dir) : root_(std::move(data_dir)) {}

  std::filesystem::path download_dir(std::string_view project) const;
  std::filesystem::path upload_dir(std::string_view project) const;
  std::filesystem::path results_dir(std::string_view project) const;

  /// Stores input content under "<prefix><md5>" ("in_" for workunit inputs, "app_" for the
  /// files of app versions) unless identical content is already there. Written to a temporary
  /// file and renamed, so a crash never leaves a partial input. ec::io_error on I/O failure.
  caf::expected<staged_file>
  stage(std::string_view project, std::string_view content, std::string_view prefix = "in_");

  /// A file of the download area as it is on disk: its size and MD5, read whole. ec::not_found
  /// when there is none, ec::invalid_argument for an unsafe name, ec::io_error when it cannot
  /// be read.
  caf::expected<staged_file> find_staged(std::string_view project, std::string_view name) const;

  /// Stages the content of a file (e.g. an uploaded output) under "in_<md5>", as `stage`
  /// does: a hard link when the file system allows it, else a copy, then a rename.
  /// ec::io_error when the file cannot be read or on I/O failure, ec::corruption when its md5
  /// is not `expected_md5`, ec::invalid_argument when that is no safe name.
  caf::expected<staged_file> stage_file(std::string_view project, const std::filesystem::path& from,
                                        std::string_view expected_md5);

  /// Bytes of an output stored so far (0 when none).
  std::uint64_t output_size(std::string_view project, std::string_view name) const;

  /// Writes `data` at `offset` of an output, dropping anything stored past the offset, and
  /// flushes it to disk. The caller checks offset <= output_size(). With `digest`, the
  /// progress carries the MD5 of the whole file: `data` is hashed as it is written, and the
  /// stored prefix [0, offset) of a resumed upload is read once before it. ec::invalid_argument
  /// when the name is unsafe, ec::io_error on I/O failure.
  caf::expected<upload_progress>
  write_output(std::string_view project, std::string_view name, std::uint64_t offset,
               std::string_view data, bool digest = false);

  /// Opens an output for writing at `offset`, dropping anything stored past it; the stored
  /// prefix [0, offset) of a resumed upload is read once into the digest. The caller checks
  /// offset <= output_size(). ec::invalid_argument when the name is unsafe, ec::io_error on
  /// I/O failure.
  caf::expected<output_writer>
  open_output(std::string_view project, std::string_view name, std::uint64_t offset);

  /// Path of an output (for the validator and the assimilation hook).
  std::filesystem::path output_path(std::string_view project, std::string_view name) const;

  /// Removes an output or an input; true if it existed.
  bool remove_output(std::string_view project, std::string_view name);
  bool remove_input(std::string_view project, std::string_view name);

private:
  std::filesystem::path root_;
};

} // namespace cobble::storage
