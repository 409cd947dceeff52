#pragma once

/// A request target (`/path/seg?key=value&...`) read into percent-decoded path segments and
/// query parameters: what the admin API routes on (net/route_table.hpp) and reads its
/// options from. Also the check of the `Host` header, which with the target names the
/// resource.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::net {

/// Percent-decodes one path segment or query value; nullopt on a malformed escape (`%` not
/// followed by two hex digits). A `+` stays a `+`.
std::optional<std::string> percent_decode(std::string_view in);

/// A request target split into decoded path segments and query parameters.
struct request_target {
  /// The path's segments, each decoded on its own: `a%2Fb` is one segment `a/b`. Empty
  /// segments are dropped, so `/api//projects/` is {"api", "projects"}.
  std::vector<std::string> path;
  /// The query's `key=value` pairs, decoded; a key without `=` has an empty value, a repeated
  /// key keeps its last value.
  std::map<std::string, std::string> query;
};

/// Splits and decodes `target`; nullopt when a segment, key or value has a malformed escape.
std::optional<request_target> split_target(std::string_view target);

/// Whether a `Host` header value is a host the server may put in the URLs it writes: a DNS
/// name or IPv4 address (letters, digits, '-', '.', '_'), or an IPv6 address in brackets,
/// with an optional port of 1 to 5 digits up to 65535; at most 255 bytes. Anything else
/// (spaces, '/', '@', quotes, non-ASCII) would make a master page or a scheduler reply that
/// points somewhere else, or that cannot be written.
bool valid_host(std::string_view host);

} // namespace cobble::net
