#pragma once
/// The volunteer site's pages rendered from Mustache templates (kainjow's header-only library,
/// Debian's libkainjow-mustache-dev). The templates live in net/templates/*.mustache and are
/// compiled into the server (net/CMakeLists.txt), so `cobbled` needs no files beside itself.
///
/// Every `{{value}}` is HTML-escaped by the library (& < > " '), so a name, team or host name
/// typed by a volunteer is shown as text, never as markup; only `{{{body}}}` and `{{{head}}}`
/// of the layout, which this module fills with its own rendering, are inserted as they are.
#include <kainjow/mustache.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace cobble::net::web {

using data = kainjow::mustache::data;
using object = kainjow::mustache::object;
using list = kainjow::mustache::list;

/// Every template's text by name (the file name without `.mustache`); generated.
const std::map<std::string, std::string, std::less<>>& template_texts();

/// What the layout around every page shows.
struct frame {
  std::string title;           ///< The page's title (the project's name follows it).
  std::string project;         ///< The project's long name.
  std::string base;            ///< The project's path, `/NAME/`: every link is relative to it.
  std::string user;            ///< The logged-in volunteer's name; empty: nobody is logged in.
  std::string csrf;            ///< The form token of the log-out button.
  std::string head;            ///< Markup for the page's head, as it is (the scheduler lines).
  bool operator_pages = false; ///< An operator page: the header shows the operator's links.
};

/// `page` rendered with `values`, inside the layout.
/// @throws std::invalid_argument when there is no template `page`; std::runtime_error when a
///         template does not parse (check_templates() finds that at start-up).
std::string render(std::string_view page, const data& values, const frame& f);

/// Parses every template; throws std::runtime_error naming the first that does not parse and
/// why. The server calls it at start-up so that a broken template stops it there.
void check_templates();

} // namespace cobble::net::web
