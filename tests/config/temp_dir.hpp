#pragma once

/// A fresh temporary directory per test, removed afterwards.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace cobble::test {

/// Creates a unique directory under the system temporary directory; removes it on destruction.
class temp_dir {
public:
  temp_dir() {
    auto pattern = (std::filesystem::temp_directory_path() / "cobble-config-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
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
