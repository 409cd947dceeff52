#include "actors/error.hpp"

#include "storage/error.hpp"

#include <caf/message.hpp>

#include <cctype>

namespace cobble {

const char* to_string(ec x) {
  switch (x) {
    case ec::unspecified:
      return "unspecified";
    case ec::unknown_project:
      return "unknown_project";
    case ec::unknown_account:
      return "unknown_account";
    case ec::unknown_host:
      return "unknown_host";
    case ec::unknown_app:
      return "unknown_app";
    case ec::unknown_workunit:
      return "unknown_workunit";
    case ec::invalid_argument:
      return "invalid_argument";
    case ec::duplicate:
      return "duplicate";
    case ec::storage_failure:
      return "storage_failure";
    case ec::corrupt_log:
      return "corrupt_log";
    case ec::unauthorized:
      return "unauthorized";
    case ec::unknown_sequence:
      return "unknown_sequence";
    case ec::conflict:
      return "conflict";
  }
  return "?";
}

bool is(const caf::error& e, ec x) {
  return e && e.category() == caf::atom("cobble") && e.code() == static_cast<std::uint8_t>(x);
}

std::string describe(const caf::error& e) {
  if (!e)
    return "no error";
  if (e.category() == caf::atom("cobble")) {
    std::string out;
    const auto& ctx = e.context();
    for (std::size_t i = 0; i < ctx.size(); ++i) {
      if (ctx.match_element<std::string>(i)) {
        if (!out.empty())
          out += ": ";
        out += ctx.get_as<std::string>(i);
      }
    }
    return out.empty() ? std::string{to_string(static_cast<ec>(e.code()))} : out;
  }
  if (e.category() == caf::atom("storage"))
    return storage::describe(e);
  return caf::to_string(e);
}

std::string describe_sentence(const caf::error& e) {
  auto text = describe(e);
  if (!text.empty())
    text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  if (text.empty() || text.back() != '.')
    text += '.';
  return text;
}

} // namespace cobble
