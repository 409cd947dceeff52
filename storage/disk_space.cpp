#include "storage/disk_space.hpp"

#include "storage/error.hpp"
#include "storage/posix_file.hpp"

#include <cerrno>
#include <utility>

#include <sys/statvfs.h>

namespace cobble::storage {

disk_space::disk_space(std::filesystem::path dir, std::uint64_t min_free)
  : dir_(std::move(dir)), min_free_(min_free) {
  // nop
}

caf::error disk_space::check() {
  struct statvfs sv {};
  if (::statvfs(dir_.c_str(), &sv) != 0)
    return posix_error("statvfs", dir_, errno);
  auto free = static_cast<std::uint64_t>(sv.f_bavail) * static_cast<std::uint64_t>(sv.f_frsize);
  free_.store(free, std::memory_order_relaxed);
  low_.store(min_free_ > 0 && free < min_free_, std::memory_order_relaxed);
  return {};
}

std::string disk_space::describe() const {
  return std::to_string(free_bytes()) + " bytes free on " + dir_.string()
         + (low() ? ", below" : ", at or above") + " server.min_free_disk ("
         + std::to_string(min_free_) + " bytes)";
}

} // namespace cobble::storage
