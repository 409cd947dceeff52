#include "site_load.hpp"

#include "http_call.hpp"

#include <boost/beast/http/verb.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <regex>
#include <stdexcept>

namespace cobble::bench {

namespace {

namespace http = boost::beast::http;

/// A page GET or a form POST of the site, with the visitor's cookies.
http_exchange call(std::uint16_t port, http::verb verb, const std::string& target,
                   const std::string& cookie, const std::string& form = {}) {
  http_call_options o;
  o.cookie = cookie;
  o.timeout = std::chrono::seconds(60);
  if (verb == http::verb::post) {
    o.same_origin = true;
    o.content_type = "application/x-www-form-urlencoded";
    o.body = form;
  }
  return http_call(port, verb, target, o);
}

/// `form`'s value escaped for application/x-www-form-urlencoded.
std::string escaped(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string first_match(const std::string& body, const std::regex& re, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(body, m, re))
    throw std::runtime_error("the site's page has no " + what);
  return m[1];
}

} // namespace

site_volunteer join_site(std::uint16_t port, const std::string& project, const std::string& name,
                         const std::string& email, const std::string& password) {
  auto base = "/" + project + "/";
  auto form = call(port, http::verb::get, base + "create_account", {});
  if (form.status != 200 || form.cookies.empty())
    throw std::runtime_error("the join form answered " + std::to_string(form.status));
  auto csrf_cookie = form.cookies.front();
  auto csrf = first_match(form.body, std::regex{R"re(name="csrf" value="([^"]+)")re"},
                          "form token");
  auto made = call(port, http::verb::post, base + "create_account", csrf_cookie,
                   "csrf=" + escaped(csrf) + "&name=" + escaped(name) + "&email=" + escaped(email)
                     + "&password=" + escaped(password));
  if (made.status != 303 || made.cookies.empty())
    throw std::runtime_error("joining answered " + std::to_string(made.status) + ": "
                             + made.body.substr(0, 400));
  site_volunteer v;
  v.cookie = csrf_cookie + "; " + made.cookies.front();
  auto page = call(port, http::verb::get, base + "account", v.cookie);
  if (page.status != 200)
    throw std::runtime_error("the account page answered " + std::to_string(page.status));
  v.account_key = first_match(page.body, std::regex{R"re(<code>([0-9a-f]{32})</code>)re"},
                              "account key");
  return v;
}

site_page get_page(std::uint16_t port, const std::string& target, const std::string& cookie) {
  auto r = call(port, http::verb::get, target, cookie);
  return {r.status, std::move(r.body)};
}

std::vector<std::uint64_t> host_links(const std::string& body) {
  std::vector<std::uint64_t> out;
  std::regex re{R"re(host\?id=([0-9]+))re"};
  for (auto i = std::sregex_iterator(body.begin(), body.end(), re); i != std::sregex_iterator();
       ++i)
    out.push_back(std::stoull((*i)[1]));
  return out;
}

std::vector<page_kind>
site_pages(const std::string& project, std::uint64_t host_id, std::uint64_t ranked) {
  auto base = "/" + project + "/";
  page_kind top{"top lists", 4, {}};
  // Pages spread over the ranking (at most its first 10,000 ranks, as the site serves).
  auto deepest = std::min<std::uint64_t>(ranked, 10000);
  std::uint64_t k = 0;
  for (const char* list : {"users", "hosts", "teams"})
    for (const char* sort : {"recent", "total"}) {
      auto offset = deepest > 20 ? (k * 7919 % (deepest / 20)) * 20 : 0;
      ++k;
      top.targets.push_back(base + "top?list=" + list + "&sort=" + sort
                            + "&offset=" + std::to_string(offset));
    }
  return {
    {"account", 4, {base + "account"}},
    top,
    {"computer", 1, {base + "host?id=" + std::to_string(host_id)}},
    {"home", 1, {base}},
  };
}

std::vector<std::string> page_mix(const std::vector<page_kind>& kinds) {
  std::vector<std::string> out;
  std::vector<std::size_t> next(kinds.size(), 0);
  unsigned most = 0;
  for (const auto& k : kinds)
    most = std::max(most, k.weight);
  for (unsigned round = 0; round < most; ++round)
    for (std::size_t i = 0; i < kinds.size(); ++i)
      if (round < kinds[i].weight && !kinds[i].targets.empty())
        out.push_back(kinds[i].targets[next[i]++ % kinds[i].targets.size()]);
  return out;
}

} // namespace cobble::bench
