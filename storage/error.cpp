#include "storage/error.hpp"

#include <caf/sec.hpp>

namespace cobble::storage {

const char* to_string(ec x) {
  switch (x) {
    case ec::unspecified:
      return "unspecified";
    case ec::io_error:
      return "io_error";
    case ec::corruption:
      return "corruption";
    case ec::not_found:
      return "not_found";
    case ec::invalid_argument:
      return "invalid_argument";
    case ec::unsupported_format:
      return "unsupported_format";
  }
  return "unknown";
}

caf::error make_error(ec code, std::string what) {
  return caf::error{code, std::move(what)};
}

namespace {

/// Joins the context elements, strings verbatim and anything else as CAF prints it.
std::string render_context(const caf::message& ctx) {
  std::string out;
  for (std::size_t i = 0; i < ctx.size(); ++i) {
    if (i > 0)
      out += ", ";
    if (ctx.match_element<std::string>(i))
      out += ctx.get_as<std::string>(i);
    else
      out += ctx.stringify(i);
  }
  return out;
}

} // namespace

std::string context_of(const caf::error& e) {
  return render_context(e.context());
}

std::string describe(const caf::error& e) {
  if (!e)
    return "no error";
  std::string out;
  if (e.category() == caf::atom("storage")) {
    out = "storage ";
    for (const char* c = to_string(static_cast<ec>(e.code())); *c != '\0'; ++c)
      out += *c == '_' ? ' ' : *c;
  } else if (e.category() == caf::atom("system")) {
    out = "system ";
    out += caf::to_string(static_cast<caf::sec>(e.code()));
  } else {
    out = caf::to_string(e.category());
    out += ' ';
    out += std::to_string(e.code());
  }
  if (!e.context().empty()) {
    out += ": ";
    out += render_context(e.context());
  }
  return out;
}

} // namespace cobble::storage
