#include "net/web_rpc_xml.hpp"

#include "net/password.hpp"
#include "net/request_target.hpp"
#include "net/xml_text.hpp"

#include <algorithm>
#include <set>

namespace cobble::net {

namespace {

constexpr std::string_view xml_head = "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n";

double seconds(time_us t) {
  return static_cast<double>(t) / 1e6;
}

void write_credit(xml::writer& w, const credit_totals& c) {
  w.number("total_credit", c.total);
  w.number("expavg_credit", c.expavg);
  w.number("expavg_time", seconds(c.expavg_time));
}

void write_team(xml::writer& w, const team_view& t) {
  w.open("team");
  w.number("id", t.team.id);
  w.number("create_time", static_cast<std::int64_t>(seconds(t.team.created)));
  w.number("userid", t.team.founder);
  w.text("name", t.team.name);
  w.text("url", t.team.url);
  w.text("country", t.team.country);
  write_credit(w, t.credit);
  w.number("nusers", t.members);
  w.close("team");
}

} // namespace

std::string web_error_xml(int num, std::string_view msg) {
  xml::writer w;
  w.s = xml_head;
  w.open("error");
  w.number("error_num", num);
  w.text("error_msg", msg);
  w.close("error");
  return std::move(w.s);
}

std::vector<std::pair<std::string, std::string>> platforms_of(const std::vector<app_rec>& apps) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& a : apps)
    for (const auto& v : a.versions)
      if (!v.deprecated)
        seen.emplace(v.platform, v.plan_class);
  return {seen.begin(), seen.end()};
}

std::string project_config_xml(const project_config_info& info) {
  xml::writer w;
  w.s = xml_head;
  w.open("project_config");
  w.text("name", info.name);
  w.text("master_url", info.master_url);
  w.text("web_rpc_url_base", info.master_url);
  w.number("web_stopped", 0);
  w.flag("account_creation_disabled", info.creation_disabled || info.invitation_required);
  w.flag("invite_code_required", info.invitation_required);
  w.number("min_passwd_length", info.min_passwd_length);
  w.number("sched_stopped", 0);
  w.open("platforms");
  for (const auto& [platform, plan_class] : info.platforms) {
    w.open("platform");
    w.text("platform_name", platform);
    w.text("user_friendly_name", platform);
    if (!plan_class.empty())
      w.text("plan_class", plan_class);
    w.close("platform");
  }
  w.close("platforms");
  if (!info.terms_of_use.empty())
    w.block("terms_of_use", info.terms_of_use);
  w.close("project_config");
  return std::move(w.s);
}

std::string account_out_xml(std::string_view authenticator) {
  xml::writer w;
  w.s = xml_head;
  w.open("account_out");
  w.text("authenticator", authenticator);
  w.close("account_out");
  return std::move(w.s);
}

std::string account_exists_xml() {
  xml::writer w;
  w.s = xml_head;
  w.open("account_out");
  w.flag("success", true);
  w.close("account_out");
  return std::move(w.s);
}

std::string public_cpid(const user_rec& u) {
  if (u.cross_project_id.empty())
    return {};
  return md5_hex(u.cross_project_id + u.email);
}

std::string am_get_info_xml(const account_view& a, bool founder) {
  const auto& u = a.user;
  xml::writer w;
  w.s = xml_head;
  w.open("am_get_info_reply");
  w.flag("success", true);
  w.number("id", u.id);
  w.text("name", php_urlencode(u.name));
  w.text("country", php_urlencode(u.country));
  w.text("cpid", public_cpid(u));
  w.number("has_profile", 0);
  w.number("create_time", static_cast<std::int64_t>(seconds(u.created)));
  w.text("url", php_urlencode(u.url));
  w.number("send_email", 0);
  w.number("show_hosts", 1);
  w.number("teamid", a.team);
  w.text("venue", "");
  w.text("postal_code", php_urlencode(u.postal_code));
  w.flag("teamfounder", founder);
  w.close("am_get_info_reply");
  return std::move(w.s);
}

std::string am_set_info_xml() {
  xml::writer w;
  w.s = xml_head;
  w.open("am_set_info_reply");
  w.flag("success", true);
  w.close("am_set_info_reply");
  return std::move(w.s);
}

std::string user_xml(const account_view& a, bool hosts) {
  const auto& u = a.user;
  xml::writer w;
  w.s = xml_head;
  w.open("user");
  w.number("id", u.id);
  w.text("cpid", public_cpid(u));
  w.number("create_time", static_cast<std::int64_t>(seconds(u.created)));
  w.text("name", u.name);
  w.text("country", u.country);
  write_credit(w, u.credit);
  w.number("teamid", a.team);
  w.text("url", u.url);
  w.number("has_profile", 0);
  if (hosts)
    for (const auto& h : a.hosts) {
      w.open("host");
      w.number("id", h.id);
      w.number("create_time", static_cast<std::int64_t>(seconds(h.created)));
      write_credit(w, h.credit);
      w.close("host");
    }
  w.close("user");
  return std::move(w.s);
}

std::string team_xml(const team_view& t) {
  xml::writer w;
  w.s = xml_head;
  write_team(w, t);
  return std::move(w.s);
}

std::string teams_xml(const std::vector<team_view>& teams) {
  xml::writer w;
  w.s = xml_head;
  w.open("teams");
  for (const auto& t : teams)
    write_team(w, t);
  w.close("teams");
  return std::move(w.s);
}

std::string create_team_xml(id_type team) {
  xml::writer w;
  w.s = xml_head;
  w.open("create_team_reply");
  w.flag("success", true);
  w.number("team_id", team);
  w.close("create_team_reply");
  return std::move(w.s);
}

std::string php_urlencode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
        || c == '_' || c == '.') {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  return out;
}

std::optional<std::map<std::string, std::string>> parse_form(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty())
      continue;
    auto eq = pair.find('=');
    std::string key{pair.substr(0, eq)};
    std::string value{eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1)};
    std::replace(key.begin(), key.end(), '+', ' ');
    std::replace(value.begin(), value.end(), '+', ' ');
    auto k = percent_decode(key);
    auto v = percent_decode(value);
    if (!k || !v)
      return std::nullopt;
    out.emplace(std::move(*k), std::move(*v));
  }
  return out;
}

bool plausible_email(std::string_view email) {
  if (email.empty() || email.size() > 254)
    return false;
  if (std::any_of(email.begin(), email.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u <= 0x20 || u == 0x7f || c == '<' || c == '>' || c == '"' || c == '\'' || c == ','
               || c == ';';
      }))
    return false;
  auto at = email.find('@');
  if (at == 0 || at == std::string_view::npos || email.find('@', at + 1) != std::string_view::npos)
    return false;
  auto domain = email.substr(at + 1);
  auto dot = domain.find('.');
  return dot != std::string_view::npos && dot > 0 && domain.back() != '.';
}

} // namespace cobble::net
