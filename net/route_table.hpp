#pragma once

/// Routing by method and path pattern: a table of {method, pattern, handler} entries, where a
/// pattern such as `/api/projects/{project}/workunits/{workunit}` has literal segments and
/// named ones that bind whatever one segment of the path holds.
///
/// The table matches a path already split into percent-decoded segments (request_target.hpp),
/// so a named segment binds the decoded text (`a%2Fb` binds `a/b`) and a literal matches its
/// decoded spelling too.

#include <boost/beast/http.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::net {

namespace http = boost::beast::http;

/// The segments a match bound, by the names of the pattern's `{name}` segments.
using route_params = std::map<std::string, std::string, std::less<>>;

/// A path pattern: segments separated by `/` (empty ones ignored, as in a path), each either a
/// literal that must equal the path's segment or `{name}`, which matches any one segment and
/// binds it to `name`.
class route_pattern {
public:
  /// Throws std::invalid_argument on a malformed pattern: a brace anywhere but around a whole
  /// segment, an empty name, or a name used twice.
  explicit route_pattern(std::string_view text);

  /// The bound segments when `path` has exactly the pattern's segments; nullopt otherwise.
  [[nodiscard]] std::optional<route_params> match(std::span<const std::string> path) const;

  /// The bound segments when `path` starts with the pattern's segments (and may go on).
  [[nodiscard]] std::optional<route_params> match_prefix(std::span<const std::string> path) const;

  /// The pattern as written.
  [[nodiscard]] const std::string& text() const { return text_; }

private:
  struct segment {
    std::string text; ///< The literal, or the name of a `{name}` segment.
    bool binds = false;
  };
  std::vector<segment> segments_;
  std::string text_;
};

/// The value of an `Allow` header for `methods`: "GET, POST".
std::string allow_header(std::span<const http::verb> methods);

/// How a request fared against a route_table.
enum class route_outcome {
  found,        ///< A route has the path and the method.
  wrong_method, ///< Routes have the path, none the method: 405 with `Allow`.
  no_match,     ///< No route has the path: 404.
};

/// Routes by method and path pattern. The entries are tried in the order they were added: the
/// first whose pattern matches the path and whose method is the request's wins. Give each
/// method of a path its own entry; the `Allow` list follows their order.
template <class Handler>
class route_table {
public:
  struct entry {
    http::verb method;
    route_pattern pattern;
    Handler handler;
  };

  /// What match() found.
  struct result {
    route_outcome outcome = route_outcome::no_match;
    const entry* route = nullptr;    ///< found: the route.
    route_params params;             ///< found: what its pattern bound.
    std::vector<http::verb> allowed; ///< wrong_method: the path's methods, in table order.
  };

  /// Adds a route; throws std::invalid_argument on a malformed pattern.
  void add(http::verb method, std::string_view pattern, Handler fn) {
    entries_.push_back(entry{method, route_pattern{pattern}, std::move(fn)});
  }

  /// The route for `method` on `path` (percent-decoded segments), or why there is none.
  [[nodiscard]] result match(http::verb method, std::span<const std::string> path) const {
    result out;
    for (const auto& e : entries_) {
      auto params = e.pattern.match(path);
      if (!params)
        continue;
      if (e.method == method) {
        out.outcome = route_outcome::found;
        out.route = &e;
        out.params = std::move(*params);
        out.allowed.clear();
        return out;
      }
      if (std::find(out.allowed.begin(), out.allowed.end(), e.method) == out.allowed.end())
        out.allowed.push_back(e.method);
    }
    out.outcome = out.allowed.empty() ? route_outcome::no_match : route_outcome::wrong_method;
    return out;
  }

  /// Every route, in the order they were added.
  [[nodiscard]] const std::vector<entry>& entries() const { return entries_; }

private:
  std::vector<entry> entries_;
};

} // namespace cobble::net
