#pragma once
/// The volunteer site's sessions and form tokens, kept by the browser and checked with a key
/// only the server has, so that no session is stored on the server and none is lost on a
/// restart.
///
/// An operator's session (`cobble_operator`) is `EXPIRES.MAC`, bound to the admin token.
///
/// A session cookie is `USERID.EXPIRES.MAC`: the account's id, when it ends (Unix seconds)
/// and an HMAC-SHA256 over the project, both numbers, the account key and the stored password.
/// Changing the password (or the account key) therefore ends every session of the account;
/// logging out clears the cookie of that browser.
///
/// Forms are protected against cross-site request forgery by a signed double-submit token: a
/// random `cobble_csrf` cookie (SameSite=Strict) and a hidden `csrf` field that is the HMAC
/// of that cookie; a form posted from another site has the field of neither.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cobble::net::web {

/// The server's key for sessions and form tokens, derived from a kept secret.
class site_key {
public:
  /// @throws std::invalid_argument when `secret` is shorter than 16 bytes.
  explicit site_key(std::string_view secret);
  /// HMAC-SHA256 of `message` under the key, as 64 hex digits.
  [[nodiscard]] std::string mac(std::string_view message) const;

private:
  std::array<unsigned char, 32> key_{};
};

/// The cookie that holds a session and the one that holds the form token.
inline constexpr std::string_view session_cookie = "cobble_session";
inline constexpr std::string_view csrf_cookie = "cobble_csrf";

/// How long a session lasts: 14 days from logging in.
inline constexpr std::int64_t session_seconds = std::int64_t{14} * 86400;

/// A session cookie's parts, before its MAC is checked against the account.
struct session_claim {
  std::uint64_t user = 0;
  std::int64_t expires = 0;
  std::string mac;
};

/// The cookie value of a session of `user` in `project` that ends at `expires`.
std::string
session_value(const site_key& key, std::string_view project, std::uint64_t user,
              std::int64_t expires, std::string_view authenticator, std::string_view stored_passwd);

/// The parts of a session cookie value; nullopt when it is malformed or ended before `now`.
std::optional<session_claim> read_session(std::string_view value, std::int64_t now);

/// Whether `claim` was made by this server for this account as it is now.
bool session_valid(const site_key& key, std::string_view project, const session_claim& claim,
                   std::string_view authenticator, std::string_view stored_passwd);

/// The cookie that holds an operator's session on the operator pages (`/NAME/ops/`), and how
/// long one lasts: 12 hours from logging in with the admin token.
inline constexpr std::string_view operator_cookie = "cobble_operator";
inline constexpr std::int64_t operator_seconds = std::int64_t{12} * 3600;

/// The cookie value of an operator's session in `project` that ends at `expires`:
/// `EXPIRES.MAC`, the MAC over the project, the end and the admin token, so a new admin token
/// ends every operator session.
std::string operator_value(const site_key& key, std::string_view project, std::int64_t expires,
                           std::string_view admin_token);

/// Whether `value` is an operator session this server made in `project` for `admin_token`
/// that has not ended before `now`. An empty token opens no session.
bool operator_valid(const site_key& key, std::string_view project, std::string_view value,
                    std::int64_t now, std::string_view admin_token);

/// A new random form-token cookie value (32 hex digits).
std::string new_csrf_value();

/// The hidden form field that goes with the form-token cookie `cookie_value`.
std::string
csrf_field(const site_key& key, std::string_view project, std::string_view cookie_value);

/// Whether a posted `field` goes with the form-token cookie (compared in constant time).
bool csrf_matches(const site_key& key, std::string_view project, std::string_view cookie_value,
                  std::string_view field);

/// The value of cookie `name` in a `Cookie` request header; nullopt when it is absent.
std::optional<std::string> cookie_value(std::string_view header, std::string_view name);

/// A `Set-Cookie` header value: HttpOnly, SameSite (`Lax` or `Strict`), Path `path`, Secure
/// when `secure`; `max_age` 0 removes the cookie.
std::string set_cookie(std::string_view name, std::string_view value, std::string_view path,
                       std::int64_t max_age, std::string_view same_site, bool secure);

} // namespace cobble::net::web
