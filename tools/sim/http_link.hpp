#pragma once

/// The emulator against a running cobbled (`cobble-sim run --server URL`): scheduler RPCs as
/// BOINC XML over HTTP (net/boinc_xml's client side), work and the `sim` user through the
/// admin API (a bearer token, on cobbled's admin listener), and real time: advance() waits for the
/// wall clock. The HTTP client is the tools' own (tools/common/http_client.hpp).

#include "tools/sim/emulator.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace cobble::sim {

/// Checks that `url` is usable (http://host:port[/prefix]); throws std::invalid_argument
/// saying what is wrong, naming `option`.
void check_server_url(const std::string& url, std::string_view option);

/// Connects to `url` (http://host:port, optionally with a path prefix) for scheduler RPCs and
/// uploads, and to `admin_url` for the admin API. Throws std::invalid_argument for a
/// malformed URL.
std::unique_ptr<server_link> http_link(const std::string& url, const std::string& admin_url,
                                       const std::string& token, std::chrono::milliseconds timeout);

} // namespace cobble::sim
