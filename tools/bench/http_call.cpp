#include "http_call.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace cobble::bench {

http_exchange http_call(std::uint16_t port, boost::beast::http::verb verb,
                        const std::string& target, const http_call_options& options) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  stream.expires_after(options.timeout);
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{verb, target, 11};
  auto authority = "127.0.0.1:" + std::to_string(port);
  req.set(http::field::host, authority);
  if (!options.token.empty())
    req.set(http::field::authorization, "Bearer " + options.token);
  if (!options.cookie.empty())
    req.set(http::field::cookie, options.cookie);
  if (options.same_origin)
    req.set(http::field::origin, "http://" + authority);
  if (!options.body.empty()) {
    req.set(http::field::content_type, options.content_type);
    req.body() = options.body;
  }
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1U << 30);
  http::read(stream, buf, parser);
  const auto& res = parser.get();
  http_exchange out{static_cast<int>(res.result_int()), res.body(), {}};
  auto [first, last] = res.base().equal_range(http::field::set_cookie);
  for (auto f = first; f != last; ++f) {
    auto v = std::string{f->value()};
    out.cookies.push_back(v.substr(0, v.find(';')));
  }
  return out;
}

} // namespace cobble::bench
