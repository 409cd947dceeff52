#include "net/web_visit.hpp"

#include "net/credit_plot.hpp"
#include "net/web_rpc_xml.hpp"
#include "net/xml_text.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <ctime>
#include <utility>

namespace cobble::net {

namespace {

constexpr std::size_t max_field = 4096;   ///< Bytes of one form field.
constexpr std::size_t body_limit = 16384; ///< Bytes of a posted form.

/// Whether `value` looks like a form-token cookie this server made (32 hex digits).
bool plausible_csrf(std::string_view value) {
  if (value.size() != 32)
    return false;
  for (char c : value)
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

/// A moment in UTC as `format` (strftime) writes it.
std::string utc_text(time_us t, const char* format) {
  std::time_t seconds = static_cast<std::time_t>(t / us_per_second);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

} // namespace

std::int64_t now_unix() {
  return wall_now() / us_per_second;
}

std::string date_text(time_us t) {
  return utc_text(t, "%Y-%m-%d");
}

std::string origin_of(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos)
    return std::string{url};
  auto path = url.find('/', scheme + 3);
  return std::string{url.substr(0, path)};
}

std::string time_text(time_us t) {
  return t <= 0 ? std::string{"never"} : utc_text(t, "%Y-%m-%d %H:%M UTC");
}

std::string user_name(const account_view_ptr& a) {
  return a ? a->user.name : std::string{};
}

web::list host_rows(const visit& v, const account_view& a, time_us now, std::size_t max) {
  web::list rows;
  for (std::size_t i = 0; i < a.hosts.size() && i < max; ++i) {
    const auto& h = a.hosts[i];
    rows.emplace_back(
      web::object{{"id", std::to_string(h.id)},
                  {"created", date_text(h.created)},
                  {"last_contact", time_text(i < a.contact.size() ? a.contact[i] : 0)},
                  {"total_credit", credit_text(h.credit.total)},
                  {"recent_credit", credit_text(h.credit.expavg_at(now, v.half_life()))}});
  }
  return rows;
}

web::list app_credit_rows(const visit& v, const account_view& a, time_us now) {
  web::list rows;
  for (const auto& app : a.apps)
    rows.emplace_back(
      web::object{{"app", app.app},
                  {"jobs", count_text(app.jobs)},
                  {"total_credit", credit_text(app.credit.total)},
                  {"recent_credit", credit_text(app.credit.expavg_at(now, v.half_life()))}});
  return rows;
}

web::list recent_result_rows(const account_view& a) {
  web::list rows;
  for (const auto& r : a.recent)
    rows.emplace_back(web::object{{"name", r.name},
                                  {"host", std::to_string(r.host)},
                                  {"app", r.app},
                                  {"at", time_text(r.at)},
                                  {"state", r.state},
                                  {"credit", r.granted > 0 ? credit_text(r.granted) : "–"}});
  return rows;
}

web::data plot_values(const account_view& a, time_us now) {
  const auto& u = a.user;
  if (!u.credit_detail)
    return web::data{false};
  auto plot = plot_credit(u.credit_detail->days, u.credit.total, u.created, now);
  if (plot.empty)
    return web::data{false};
  auto number = [](double x) { return fmt::format("{:.1f}", x); };
  web::list y_ticks;
  for (const auto& t : plot.y_ticks)
    y_ticks.emplace_back(web::object{{"pos", number(t.pos)},
                                     {"label", t.label},
                                     {"label_x", number(plot_left - 5)},
                                     {"label_y", number(t.pos + 4)}});
  web::list x_ticks;
  for (const auto& t : plot.x_ticks)
    x_ticks.emplace_back(web::object{{"pos", number(t.pos)},
                                     {"label", t.label},
                                     {"anchor", t.anchor},
                                     {"label_y", number(plot_bottom + 18)}});
  web::list rows;
  for (const auto& r : plot.rows)
    rows.emplace_back(web::object{{"date", r.date}, {"credit", r.credit}, {"total", r.total}});
  web::data out{web::object{{"summary", plot.summary},
                            {"line", plot.line},
                            {"area", plot.area},
                            {"width", number(plot_width)},
                            {"height", number(plot_height)},
                            {"left", number(plot_left)},
                            {"right", number(plot_right)}}};
  out.set("y_ticks", y_ticks);
  out.set("x_ticks", x_ticks);
  out.set("rows", rows);
  return out;
}

id_type id_in(const std::string& text) {
  id_type id = 0;
  return xml::to_integer(text, id) ? id : 0;
}

route site_route(const std::shared_ptr<web_site_context>& ctx, const std::string& name,
                 const project_actor& project, const std::string& path,
                 std::vector<http::verb> methods, page_fn fn) {
  return route{"/" + name + "/" + path,
               true,
               std::move(methods),
               body_limit,
               [ctx, name, project, fn](request&& req, const responder& respond) {
                 auto v = std::make_shared<visit>();
                 v->ctx = ctx;
                 v->project_name = name;
                 v->project = project;
                 v->shape = reply_shape{req.version(), req.keep_alive()};
                 v->respond = respond;
                 v->base = "/" + name + "/";
                 auto base = base_url(*ctx->web->edge, req);
                 v->master_url = base + v->base;
                 v->secure = base.starts_with("https://");
                 v->post = req.method() == http::verb::post;
                 v->origin = std::string{req[http::field::origin]};
                 auto cookies = req[http::field::cookie];
                 if (auto c = web::cookie_value(cookies, web::csrf_cookie); c && plausible_csrf(*c))
                   v->csrf_cookie = *c;
                 else {
                   v->csrf_cookie = web::new_csrf_value();
                   v->new_csrf = true;
                 }
                 v->session = web::cookie_value(cookies, web::session_cookie).value_or("");
                 v->operator_session = web::cookie_value(cookies, web::operator_cookie).value_or("");
                 auto target = std::string_view{req.target()};
                 if (auto mark = target.find('?'); mark != std::string_view::npos) {
                   auto query = parse_form(target.substr(mark + 1));
                   if (!query) {
                     v->message(http::status::bad_request, "Bad request",
                                "The address could not be read (a bad %-escape).");
                     return;
                   }
                   v->query = std::move(*query);
                 }
                 if (v->post) {
                   auto form = parse_form(req.body());
                   if (!form) {
                     v->message(http::status::bad_request, "Bad request",
                                "The form could not be read (a bad %-escape).");
                     return;
                   }
                   for (const auto& [k, value] : *form)
                     if (value.size() > max_field) {
                       v->message(http::status::bad_request, "Bad request",
                                  "A field of the form is longer than 4096 bytes.");
                       return;
                     }
                   v->form = std::move(*form);
                 }
                 fn(v);
               },
               {},
               {}};
}

} // namespace cobble::net
