#include "hostile.hpp"

#include "load.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <regex>

#include <sys/socket.h>
#include <sys/time.h>

namespace cobble::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// A blocking connection whose reads give up after 10 s (so that stop() never waits on a
/// server that does not answer).
struct connection {
  asio::io_context ioc;
  tcp::socket socket{ioc};

  connection(const std::string& address, std::uint16_t port) {
    socket.connect({asio::ip::make_address(address), port});
    timeval tv{10, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
};

/// POSTs `body` on a fresh connection; the answer's body, or nullopt when the connection
/// failed. `announced` overrides the Content-Length (an upload that claims more than it sends).
std::optional<std::string> post(const attack_options& o, const std::string& target,
                                const std::string& body, std::size_t announced = 0) {
  try {
    connection c{o.address, o.port};
    http::request<http::empty_body> req{http::verb::post, target, 11};
    req.set(http::field::host, o.address + ":" + std::to_string(o.port));
    req.set(http::field::user_agent, "BOINC client (x86_64-pc-linux-gnu 7.20.5)");
    req.content_length(announced != 0 ? announced : body.size());
    http::request_serializer<http::empty_body> sr{req};
    http::write_header(c.socket, sr);
    asio::write(c.socket, asio::buffer(body));
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(c.socket, buf, res);
    return std::move(res.body());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// `xml` with the text of every `<tag>` replaced.
std::string with(const std::string& xml, const std::string& tag, const std::string& value) {
  return std::regex_replace(xml, std::regex{"<" + tag + ">[^<]*</" + tag + ">"},
                            "<" + tag + ">" + value + "</" + tag + ">");
}

} // namespace

attack::attack(attack_options opts) : opts_(std::move(opts)) {}

attack::~attack() {
  if (!threads_.empty())
    stop();
}

void attack::pause() const {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(opts_.pause_ms));
}

void attack::start() {
  stop_ = false;
  threads_.emplace_back([this] { registrar(); });
  threads_.emplace_back([this] { hoarder(); });
  threads_.emplace_back([this] { uploader(); });
  threads_.emplace_back([this] { poisoner(); });
  threads_.emplace_back([this] { idler(); });
}

attack_counts attack::stop() {
  stop_ = true;
  for (auto& t : threads_)
    t.join();
  threads_.clear();
  attack_counts out;
  out.registrations = n_.registrations;
  out.hosts_registered = n_.hosts_registered;
  out.hoard_rpcs = n_.hoard_rpcs;
  out.jobs_hoarded = n_.jobs_hoarded;
  out.uploads = n_.uploads;
  out.uploads_refused = n_.uploads_refused;
  out.poisoned = n_.poisoned;
  out.poisoned_refused = n_.poisoned_refused;
  out.idle_opened = n_.idle_opened;
  out.errors = n_.errors;
  return out;
}

void attack::registrar() {
  const auto target = "/" + opts_.project + "/cgi";
  for (std::size_t i = 1'000'000; !stop_; ++i) {
    sim_host h; // hostid 0: a new host, every time
    auto answer = post(opts_, target, make_request(opts_.account_key, h, i, 3600, 1, 3600));
    ++n_.registrations;
    if (!answer)
      ++n_.errors;
    else if (scan_reply(*answer).hostid)
      ++n_.hosts_registered;
    pause();
  }
}

void attack::hoarder() {
  const auto target = "/" + opts_.project + "/cgi";
  sim_host h;
  for (std::size_t i = 2'000'000; !stop_; ++i) {
    ++h.seqno;
    // 1,024 CPUs claimed, a year of work asked for each; nothing ever reported.
    auto xml = with(make_request(opts_.account_key, h, 2'000'000, 3.15e7, 1024, 3600), "p_ncpus",
                    "1024");
    auto answer = post(opts_, target, xml);
    ++n_.hoard_rpcs;
    if (!answer) {
      ++n_.errors;
    } else {
      auto r = scan_reply(*answer);
      if (r.hostid && h.id == 0)
        h.id = *r.hostid;
      n_.jobs_hoarded += r.jobs.size();
    }
    pause();
  }
}

void attack::uploader() {
  const auto target = "/" + opts_.project + "/upload";
  for (std::size_t i = 0; !stop_; ++i) {
    auto header = "<data_server_request>\n<core_client_major_version>7</core_client_major_version>"
                  "\n<file_upload>\n<file_info>\n<name>wu_forged_"
                  + std::to_string(i)
                  + "_0</name>\n<max_nbytes>300000000</max_nbytes>\n<xml_signature>\n"
                    "cobble:1:0000000000000000000000000000000000000000000000000000000000000000\n"
                    "</xml_signature>\n</file_info>\n<nbytes>209715200</nbytes>\n"
                    "<md5_cksum></md5_cksum>\n<offset>0</offset>\n<data>\n";
    // 200 MiB announced, only the header sent.
    auto answer = post(opts_, target, header, header.size() + (std::size_t{200} << 20));
    ++n_.uploads;
    if (!answer)
      ++n_.errors;
    else if (answer->find("<status>-1</status>") != std::string::npos)
      ++n_.uploads_refused;
    pause();
  }
}

void attack::poisoner() {
  const auto target = "/" + opts_.project + "/cgi";
  for (std::size_t i = 3'000'000; !stop_; ++i) {
    sim_host h;
    auto xml = make_request(opts_.account_key, h, i, 3600, 1, 3600);
    xml = with(xml, "p_fpops", "nan");
    xml = with(xml, "domain_name", "\xff\xfe" + std::string(10000, 'x'));
    auto answer = post(opts_, target, xml);
    ++n_.poisoned;
    if (!answer)
      ++n_.errors;
    else if (scan_reply(*answer).message)
      ++n_.poisoned_refused;
    pause();
  }
}

void attack::idler() {
  std::vector<std::unique_ptr<connection>> idle;
  const std::string half = "POST /" + opts_.project + "/cgi HTTP/1.1\r\nHost: x\r\nContent-Le";
  while (!stop_) {
    // Reopen what the server closed, up to the count.
    for (auto it = idle.begin(); it != idle.end();) {
      char c = 0;
      auto n = ::recv((*it)->socket.native_handle(), &c, 1, MSG_DONTWAIT | MSG_PEEK);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
        it = idle.erase(it);
      else
        ++it;
    }
    while (!stop_ && static_cast<int>(idle.size()) < opts_.idle_connections) {
      try {
        auto c = std::make_unique<connection>(opts_.address, opts_.port);
        asio::write(c->socket, asio::buffer(half));
        idle.push_back(std::move(c));
        ++n_.idle_opened;
      } catch (const std::exception&) {
        ++n_.errors;
        break;
      }
    }
    for (int i = 0; i < 100 && !stop_; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

} // namespace cobble::bench
