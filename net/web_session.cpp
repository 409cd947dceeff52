#include "net/web_session.hpp"

#include <charconv>
#include <stdexcept>

#include <sodium.h>

namespace cobble::net::web {

namespace {

std::string to_hex(const unsigned char* data, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 0xf];
  }
  return out;
}

/// Equal strings of equal length, compared in time that does not depend on where they differ.
bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

template <class T>
bool parse_number(std::string_view text, T& out) {
  if (text.empty() || text.size() > 20)
    return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

std::string session_message(std::string_view project, std::uint64_t user, std::int64_t expires,
                            std::string_view authenticator, std::string_view stored_passwd) {
  std::string m = "session\n";
  m += project;
  m += '\n';
  m += std::to_string(user);
  m += '\n';
  m += std::to_string(expires);
  m += '\n';
  m += authenticator;
  m += '\n';
  m += stored_passwd;
  return m;
}

std::string
operator_message(std::string_view project, std::int64_t expires, std::string_view admin_token) {
  std::string m = "operator\n";
  m += project;
  m += '\n';
  m += std::to_string(expires);
  m += '\n';
  m += admin_token;
  return m;
}

} // namespace

site_key::site_key(std::string_view secret) {
  if (secret.size() < 16)
    throw std::invalid_argument("site_key: the secret must have at least 16 bytes");
  if (sodium_init() < 0)
    throw std::runtime_error("site_key: libsodium could not be initialized");
  // The secret's own bytes never key the MAC directly: a keyed hash with a fixed context
  // derives the key, so the same secret used elsewhere gives unrelated keys.
  static constexpr std::string_view context = "cobble web sessions and form tokens";
  crypto_generichash(key_.data(), key_.size(),
                     reinterpret_cast<const unsigned char*>(context.data()), context.size(),
                     reinterpret_cast<const unsigned char*>(secret.data()), secret.size());
}

std::string site_key::mac(std::string_view message) const {
  std::array<unsigned char, crypto_auth_hmacsha256_BYTES> out{};
  crypto_auth_hmacsha256(out.data(), reinterpret_cast<const unsigned char*>(message.data()),
                         message.size(), key_.data());
  return to_hex(out.data(), out.size());
}

std::string session_value(const site_key& key, std::string_view project, std::uint64_t user,
                          std::int64_t expires, std::string_view authenticator,
                          std::string_view stored_passwd) {
  return std::to_string(user) + '.' + std::to_string(expires) + '.'
         + key.mac(session_message(project, user, expires, authenticator, stored_passwd));
}

std::optional<session_claim> read_session(std::string_view value, std::int64_t now) {
  auto first = value.find('.');
  auto second = first == std::string_view::npos ? first : value.find('.', first + 1);
  if (second == std::string_view::npos)
    return std::nullopt;
  session_claim c;
  if (!parse_number(value.substr(0, first), c.user) || c.user == 0
      || !parse_number(value.substr(first + 1, second - first - 1), c.expires))
    return std::nullopt;
  c.mac = std::string{value.substr(second + 1)};
  if (c.mac.size() != std::size_t{2} * crypto_auth_hmacsha256_BYTES || c.expires <= now)
    return std::nullopt;
  return c;
}

bool session_valid(const site_key& key, std::string_view project, const session_claim& claim,
                   std::string_view authenticator, std::string_view stored_passwd) {
  return same(key.mac(
                session_message(project, claim.user, claim.expires, authenticator, stored_passwd)),
              claim.mac);
}

std::string operator_value(const site_key& key, std::string_view project, std::int64_t expires,
                           std::string_view admin_token) {
  return std::to_string(expires) + '.' + key.mac(operator_message(project, expires, admin_token));
}

bool operator_valid(const site_key& key, std::string_view project, std::string_view value,
                    std::int64_t now, std::string_view admin_token) {
  auto dot = value.find('.');
  std::int64_t expires = 0;
  if (admin_token.empty() || dot == std::string_view::npos
      || !parse_number(value.substr(0, dot), expires) || expires <= now)
    return false;
  return same(key.mac(operator_message(project, expires, admin_token)), value.substr(dot + 1));
}

std::string new_csrf_value() {
  if (sodium_init() < 0)
    throw std::runtime_error("libsodium could not be initialized");
  std::array<unsigned char, 16> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  return to_hex(bytes.data(), bytes.size());
}

std::string
csrf_field(const site_key& key, std::string_view project, std::string_view cookie_value) {
  std::string m = "csrf\n";
  m += project;
  m += '\n';
  m += cookie_value;
  return key.mac(m);
}

bool csrf_matches(const site_key& key, std::string_view project, std::string_view cookie_value,
                  std::string_view field) {
  return !cookie_value.empty() && same(csrf_field(key, project, cookie_value), field);
}

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    auto end = header.find(';');
    auto pair = header.substr(0, end);
    header = end == std::string_view::npos ? std::string_view{} : header.substr(end + 1);
    while (!pair.empty() && (pair.front() == ' ' || pair.front() == '\t'))
      pair.remove_prefix(1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name)
      continue;
    auto value = pair.substr(eq + 1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
      value.remove_suffix(1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    return std::string{value};
  }
  return std::nullopt;
}

std::string set_cookie(std::string_view name, std::string_view value, std::string_view path,
                       std::int64_t max_age, std::string_view same_site, bool secure) {
  std::string out{name};
  out += '=';
  out += value;
  out += "; Path=";
  out += path;
  out += "; Max-Age=";
  out += std::to_string(max_age);
  out += "; HttpOnly; SameSite=";
  out += same_site;
  if (secure)
    out += "; Secure";
  return out;
}

} // namespace cobble::net::web
