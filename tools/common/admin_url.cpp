#include "tools/common/admin_url.hpp"

#include <cctype>
#include <fstream>

namespace cobble::common {

std::optional<std::string> read_admin_url(const std::filesystem::path& data_dir) {
  std::ifstream in{data_dir / admin_url_file};
  std::string url;
  if (!in || !std::getline(in, url))
    return std::nullopt;
  while (!url.empty() && std::isspace(static_cast<unsigned char>(url.back())))
    url.pop_back();
  if (url.empty())
    return std::nullopt;
  return url;
}

} // namespace cobble::common
