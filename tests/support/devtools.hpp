#pragma once

// Test support: Debian's Chromium, headless, driven through the DevTools protocol (JSON over a
// WebSocket, Boost.Beast) as a volunteer's browser: open pages, type into forms and press
// their buttons, read what the page shows, take screenshots at a phone's and a desktop's width.
// For tests only; blocking.

#include "http_client.hpp"
#include "process.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace cobble::test {

class devtools_browser {
public:
  /// Starts Chromium with its own profile under `profile` (a fresh directory).
  explicit devtools_browser(const std::filesystem::path& profile) {
    using namespace std::chrono_literals;
    std::filesystem::create_directories(profile);
    proc_ = std::make_unique<child_process>(
      std::vector<std::string>{"chromium", "--headless", "--no-sandbox", "--disable-gpu",
                               "--no-first-run", "--log-level=3", "--remote-debugging-port=0",
                               "--user-data-dir=" + profile.string(), "about:blank"},
      true);
    // Chromium writes its port to DevToolsActivePort once it listens.
    auto port_file = profile / "DevToolsActivePort";
    unsigned short port = 0;
    for (int i = 0; i < 600 && port == 0; ++i) {
      std::ifstream in{port_file};
      std::string line;
      if (std::getline(in, line) && !line.empty() && std::getline(in, path_))
        port = static_cast<unsigned short>(std::stoi(line));
      else
        proc_->read_line(100ms); // waits on Chromium's output instead of sleeping
    }
    REQUIRE(port != 0);
    // The page target that opened about:blank.
    http_client list{"127.0.0.1", port};
    std::string socket_path;
    for (int i = 0; i < 100 && socket_path.empty(); ++i) {
      auto targets = nlohmann::json::parse(list.get("/json/list").body);
      for (const auto& t : targets)
        if (t.value("type", "") == "page") {
          auto url = t.value("webSocketDebuggerUrl", "");
          socket_path = url.substr(url.find('/', std::string{"ws://"}.size()));
        }
      if (socket_path.empty())
        proc_->read_line(100ms);
    }
    REQUIRE(!socket_path.empty());
    boost::asio::ip::tcp::endpoint ep{boost::asio::ip::make_address("127.0.0.1"), port};
    ws_.next_layer().connect(ep);
    ws_.read_message_max(std::size_t{256} << 20);
    ws_.handshake("127.0.0.1:" + std::to_string(port), socket_path);
    call("Page.enable");
    call("Runtime.enable");
  }

  ~devtools_browser() {
    boost::system::error_code ec;
    ws_.next_layer().close(ec);
    proc_->signal(SIGKILL);
    proc_->wait(std::chrono::seconds(30));
  }

  devtools_browser(const devtools_browser&) = delete;
  devtools_browser& operator=(const devtools_browser&) = delete;

  /// Calls a DevTools method and returns its result; throws on a protocol error.
  nlohmann::json
  call(const std::string& method, const nlohmann::json& params = nlohmann::json::object()) {
    auto id = ++next_id_;
    ws_.text(true);
    ws_.write(boost::asio::buffer(
      nlohmann::json{{"id", id}, {"method", method}, {"params", params}}.dump()));
    for (;;) {
      auto m = receive();
      if (m.contains("id") && m["id"] == id) {
        if (m.contains("error"))
          throw std::runtime_error(method + ": " + m["error"].dump());
        return m["result"];
      }
      events_.push_back(std::move(m));
    }
  }

  /// Opens `url` and waits until it has loaded.
  void open(const std::string& url) {
    events_.clear();
    call("Page.navigate", {{"url", url}});
    wait_for_load();
  }

  /// The value of a JavaScript expression evaluated in the page (strings, numbers, booleans).
  nlohmann::json eval(const std::string& expression) {
    auto r = call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}});
    if (r.contains("exceptionDetails"))
      throw std::runtime_error("page script failed: " + r["exceptionDetails"].dump());
    return r["result"].value("value", nlohmann::json{});
  }

  /// Types `value` into the field `selector` (as a user would: the field's value, then input).
  void type(const std::string& selector, const std::string& value) {
    auto ok = eval("(() => { const e = document.querySelector(" + nlohmann::json(selector).dump()
                   + "); if (!e) return false; e.focus(); e.value = " + nlohmann::json(value).dump()
                   + "; e.dispatchEvent(new Event('input', {bubbles: true})); return true; })()");
    INFO("no field " << selector << " on " << url());
    REQUIRE(ok == true);
  }

  /// Clicks the button `selector` and waits for the page it leads to.
  void click(const std::string& selector) {
    events_.clear();
    auto ok = eval("(() => { const e = document.querySelector(" + nlohmann::json(selector).dump()
                   + "); if (!e) return false; e.click(); return true; })()");
    INFO("no button " << selector << " on " << url());
    REQUIRE(ok == true);
    wait_for_load();
  }

  std::string url() { return eval("location.href").get<std::string>(); }
  std::string text() { return eval("document.body.innerText").get<std::string>(); }

  /// Sets the window to `width` x `height` CSS pixels (`mobile`: as a phone, with its
  /// viewport rules), as later pages are laid out.
  void resize(int width, int height, bool mobile) {
    call("Emulation.setDeviceMetricsOverride",
         {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", mobile}});
  }

  /// Whether the page fits its window's width (nothing to scroll sideways).
  bool fits_width() {
    return eval("document.documentElement.scrollWidth <= window.innerWidth").get<bool>();
  }

  /// Writes a PNG of the window to `path`.
  void screenshot(const std::filesystem::path& path) {
    auto data = call("Page.captureScreenshot", {{"format", "png"}})["data"].get<std::string>();
    std::string png(data.size() / 4 * 3 + 3, '\0');
    auto n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(png.data()),
                             reinterpret_cast<const unsigned char*>(data.data()),
                             static_cast<int>(data.size()));
    REQUIRE(n > 0);
    auto padding = data.size() >= 2
                     ? (data[data.size() - 1] == '=') + (data[data.size() - 2] == '=')
                     : 0;
    png.resize(static_cast<std::size_t>(n) - static_cast<std::size_t>(padding));
    std::filesystem::create_directories(path.parent_path());
    std::ofstream{path, std::ios::binary} << png;
  }

private:
  nlohmann::json receive() {
    boost::beast::flat_buffer buffer;
    ws_.read(buffer);
    return nlohmann::json::parse(boost::beast::buffers_to_string(buffer.data()));
  }

  void wait_for_load() {
    for (;;) {
      for (auto i = events_.begin(); i != events_.end(); ++i)
        if (i->value("method", "") == "Page.loadEventFired") {
          events_.erase(events_.begin(), i + 1);
          return;
        }
      events_.push_back(receive());
    }
  }

  std::unique_ptr<child_process> proc_;
  std::string path_;
  boost::asio::io_context ioc_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_{ioc_};
  int next_id_ = 0;
  std::deque<nlohmann::json> events_;
};

} // namespace cobble::test
