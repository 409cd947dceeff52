#pragma once

/// A unique temporary directory per test case, removed when the test ends.

#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>

#include <unistd.h>

namespace cobble::test {

/// Owns a fresh, not yet existing path under the system temp directory; removes it on exit.
class temp_dir {
public:
  explicit temp_dir(const std::string& tag = "actors") {
    static std::atomic<unsigned> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path()
            / ("cobble-test-" + tag + "-" + std::to_string(::getpid()) + "-"
               + std::to_string(counter++) + "-" + std::to_string(rd()));
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  /// The directory (created by whoever uses it first).
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace cobble::test
