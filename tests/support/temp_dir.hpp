#pragma once

// Test support: a unique temporary directory per test, removed when the test ends.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace cobble::test {

/// Creates a fresh directory under the system temp directory (mkdtemp); removes it on exit.
class temp_dir {
public:
  explicit temp_dir(const std::string& tag = "test") {
    auto pattern = (std::filesystem::temp_directory_path() / ("cobble-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  /// The directory.
  const std::filesystem::path& path() const { return path_; }

  /// Writes `text` to `name` inside the directory and returns its path.
  std::filesystem::path write(const std::string& name, std::string_view text) const {
    auto file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out << text;
    return file;
  }

private:
  std::filesystem::path path_;
};

} // namespace cobble::test
