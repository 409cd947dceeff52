/// The project's master page: master_page().

#include "net/boinc_xml.hpp"
#include "net/xml_text.hpp"

#include <algorithm>
#include <stdexcept>

namespace cobble::net {

using xml::append_escaped;

std::string master_page(std::string_view project_long_name, std::string_view scheduler_url) {
  constexpr std::size_t max_url = 200;
  if (scheduler_url.empty())
    throw std::invalid_argument("master_page: empty scheduler URL");
  if (scheduler_url.size() > max_url)
    throw std::invalid_argument("master_page: scheduler URL longer than 200 characters");
  for (char c : scheduler_url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '"' || c == '<' || c == '>'
        || c == '&')
      throw std::invalid_argument("master_page: scheduler URL contains a character that "
                                  "cannot appear in the master file");

  // Escape the name and stop before the <h1>/<title> line could reach 255 characters.
  constexpr std::size_t max_name = 200;
  std::string name;
  for (std::size_t i = 0; i < project_long_name.size();) {
    auto c = static_cast<unsigned char>(project_long_name[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xE  ? 3
                      : (c >> 3) == 0x1E ? 4
                                         : 1;
    len = std::min(len, project_long_name.size() - i);
    std::string piece;
    if (len == 1 && (c < 0x20 || c == 0x7f))
      piece = " ";
    else
      append_escaped(piece, project_long_name.substr(i, len));
    if (name.size() + piece.size() > max_name)
      break;
    name += piece;
    i += len;
  }
  if (name.empty())
    name = "BOINC project";

  std::string out;
  out.reserve(512 + 2 * name.size() + 2 * scheduler_url.size());
  out += "<!DOCTYPE html>\n<html>\n<head>\n<title>";
  out += name;
  out += "</title>\n<link rel=\"boinc_scheduler\" href=\"";
  out += scheduler_url;
  out += "\">\n</head>\n<body>\n<h1>";
  out += name;
  out += "</h1>\n<p>This is a BOINC project. Attach to it with a BOINC client.</p>\n"
         "<scheduler>";
  out += scheduler_url;
  out += "</scheduler>\n</body>\n</html>\n";
  return out;
}

} // namespace cobble::net
