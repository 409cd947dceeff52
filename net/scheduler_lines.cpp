/// The lines that make the project's home page a master file: scheduler_lines().

#include "net/boinc_xml.hpp"

#include <stdexcept>

namespace cobble::net {

std::string scheduler_lines(std::string_view scheduler_url) {
  constexpr std::size_t max_url = 200;
  if (scheduler_url.empty())
    throw std::invalid_argument("scheduler_lines: empty scheduler URL");
  if (scheduler_url.size() > max_url)
    throw std::invalid_argument("scheduler_lines: scheduler URL longer than 200 characters");
  for (char c : scheduler_url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '"' || c == '<' || c == '>'
        || c == '&' || c == '\'')
      throw std::invalid_argument("scheduler_lines: scheduler URL contains a character that "
                                  "cannot appear in the master file");
  std::string out;
  out.reserve(64 + 2 * scheduler_url.size());
  out += "<link rel=\"boinc_scheduler\" href=\"";
  out += scheduler_url;
  out += "\">\n<!--\n<scheduler>";
  out += scheduler_url;
  out += "</scheduler>\n-->";
  return out;
}

} // namespace cobble::net
