#pragma once
/// Passwords of volunteers' accounts. A BOINC client never sends a password: it sends
/// md5(password + lowercase e-mail) as 32 hex digits (the "passwd_hash" of the web RPCs), and
/// the site computes the same from what a volunteer types. Cobble stores that hash hashed
/// again with Argon2id (libsodium's crypto_pwhash_str, its interactive limits: 64 MiB and a
/// few tens of milliseconds), never the bare md5, which a leaked database would give away.
///
/// Hashing costs memory and time on purpose, so it runs on a password_pool's own thread,
/// never on an Asio thread or in an actor's handler; the pool takes a bounded number of
/// requests at once, which also bounds how fast anyone can guess.
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cobble::net {

/// The MD5 of `text` in lower-case hex (BOINC's md5_string).
std::string md5_hex(std::string_view text);

/// md5(password + lowercase(email)) in lower-case hex: what a BOINC client sends.
std::string boinc_password_hash(std::string_view password, std::string_view email);

/// True when `text` has the form of a BOINC password hash (32 hex digits, any case).
bool is_boinc_password_hash(std::string_view text);

/// The stored form of a BOINC password hash (lower-cased first): an Argon2id string with its
/// own random salt. Throws std::runtime_error when libsodium cannot hash (out of memory).
std::string store_password(std::string_view boinc_hash);

/// True when `boinc_hash` (any case) is the one `stored` was made from; false for an empty or
/// malformed `stored`.
bool password_matches(std::string_view stored, std::string_view boinc_hash);

/// Wrong passwords per account: after `max_failures` within `window` seconds, further
/// attempts on that account are refused without a check until the window has passed since the
/// first of them (the counter then starts again). A right password clears the account's count.
/// Holds at most `max_accounts` counters (the oldest go first). Thread-safe.
class failure_limiter {
public:
  explicit failure_limiter(int max_failures = 5, double window = 900,
                           std::size_t max_accounts = 100000);

  /// Seconds until `key` may try again at `now` (seconds, any epoch); 0: it may now.
  double wait(const std::string& key, double now);
  /// A wrong password for `key` at `now`.
  void failed(const std::string& key, double now);
  /// wait() and failed() now, by the wall clock.
  double wait(const std::string& key);
  void failed(const std::string& key);
  /// A right password for `key`.
  void succeeded(const std::string& key);

private:
  struct count {
    int failures = 0;
    double first = 0;
  };
  int max_failures_;
  double window_;
  std::size_t max_accounts_;
  std::mutex mtx_;
  std::unordered_map<std::string, count> counts_;
};

/// A thread that hashes and checks passwords, one request at a time, holding at most
/// `max_pending` requests (running or waiting). The site keeps a second one that reads the
/// event log for the operator pages' stories: any slow work that must not hold an Asio
/// thread or an actor, bounded so that a crowd of requests is told "busy" instead of queued.
class password_pool {
public:
  explicit password_pool(std::size_t max_pending = 64);
  ~password_pool();
  password_pool(const password_pool&) = delete;
  password_pool& operator=(const password_pool&) = delete;

  /// Runs `work` on the pool's thread; false (and `work` is dropped) when max_pending
  /// requests are already held, so the caller can answer "busy, try later".
  bool post(std::function<void()> work);

  /// Requests held now (for tests and /metrics).
  [[nodiscard]] std::size_t pending() const { return pending_->load(); }

private:
  std::size_t max_pending_;
  std::shared_ptr<std::atomic<std::size_t>> pending_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
};

} // namespace cobble::net
