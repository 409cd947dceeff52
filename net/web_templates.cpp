#include "net/web_templates.hpp"

#include <stdexcept>

namespace cobble::net::web {

namespace {

/// A template parsed afresh: rendering mutates the library's parsed form, so no parsed
/// template is shared between the threads that render pages (parsing one takes microseconds).
kainjow::mustache::mustache parsed(std::string_view name) {
  const auto& texts = template_texts();
  auto i = texts.find(name);
  if (i == texts.end())
    throw std::invalid_argument("no page template '" + std::string{name} + "'");
  kainjow::mustache::mustache m{i->second};
  if (!m.is_valid())
    throw std::runtime_error("page template '" + i->first
                             + "' does not parse: " + m.error_message());
  return m;
}

} // namespace

std::string render(std::string_view page, const data& values, const frame& f) {
  auto body = parsed(page).render(values);
  data layout{object{{"title", f.title},
                     {"project", f.project},
                     {"base", f.base},
                     {"head", f.head},
                     {"body", body}}};
  if (f.operator_pages)
    layout.set("operator", object{{"csrf", f.csrf}, {"base", f.base}});
  else if (!f.user.empty())
    layout.set("user", object{{"name", f.user}, {"csrf", f.csrf}, {"base", f.base}});
  return parsed("layout").render(layout);
}

void check_templates() {
  for (const auto& [name, text] : template_texts())
    parsed(name);
}

} // namespace cobble::net::web
