#include "net/password.hpp"

#include "actors/clock.hpp"
#include "actors/state.hpp"

#include <boost/asio/post.hpp>

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include <sodium.h>

namespace cobble::net {

namespace {

void init_sodium() {
  static const bool ready = sodium_init() >= 0;
  if (!ready)
    throw std::runtime_error("libsodium could not be initialised");
}

} // namespace

std::string md5_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int n = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &n, EVP_md5(), nullptr) != 1)
    throw std::runtime_error("md5 failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

std::string boinc_password_hash(std::string_view password, std::string_view email) {
  return md5_hex(std::string{password} + fold_case(email));
}

bool is_boinc_password_hash(std::string_view text) {
  return text.size() == 32 && std::all_of(text.begin(), text.end(), [](unsigned char c) {
           return std::isxdigit(c) != 0;
         });
}

std::string store_password(std::string_view boinc_hash) {
  init_sodium();
  auto key = fold_case(boinc_hash);
  std::array<char, crypto_pwhash_STRBYTES> out{};
  if (crypto_pwhash_str(out.data(), key.data(), key.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE)
      != 0)
    throw std::runtime_error("password hashing ran out of memory");
  return std::string{out.data()};
}

bool password_matches(std::string_view stored, std::string_view boinc_hash) {
  init_sodium();
  if (stored.empty() || stored.size() >= crypto_pwhash_STRBYTES)
    return false;
  std::string s{stored}; // NUL-terminated, as libsodium wants it
  auto key = fold_case(boinc_hash);
  return crypto_pwhash_str_verify(s.c_str(), key.data(), key.size()) == 0;
}

failure_limiter::failure_limiter(int max_failures, double window, std::size_t max_accounts)
  : max_failures_(std::max(max_failures, 1)), window_(window),
    max_accounts_(std::max<std::size_t>(max_accounts, 1)) {}

double failure_limiter::wait(const std::string& key) {
  return wait(key, static_cast<double>(wall_now()) / us_per_second);
}

void failure_limiter::failed(const std::string& key) {
  failed(key, static_cast<double>(wall_now()) / us_per_second);
}

double failure_limiter::wait(const std::string& key, double now) {
  std::lock_guard lock{mtx_};
  auto i = counts_.find(key);
  if (i == counts_.end() || i->second.failures < max_failures_)
    return 0;
  auto left = i->second.first + window_ - now;
  if (left <= 0) {
    counts_.erase(i);
    return 0;
  }
  return left;
}

void failure_limiter::failed(const std::string& key, double now) {
  std::lock_guard lock{mtx_};
  auto i = counts_.find(key);
  if (i != counts_.end() && now - i->second.first > window_)
    i->second = count{};
  if (i == counts_.end()) {
    if (counts_.size() >= max_accounts_) {
      // Full: the counter that started longest ago goes (a linear scan, rare: only when a
      // flood of wrong passwords has filled the table).
      auto oldest = std::min_element(counts_.begin(), counts_.end(), [](auto& a, auto& b) {
        return a.second.first < b.second.first;
      });
      counts_.erase(oldest);
    }
    i = counts_.emplace(key, count{}).first;
  }
  if (i->second.failures == 0)
    i->second.first = now;
  ++i->second.failures;
}

void failure_limiter::succeeded(const std::string& key) {
  std::lock_guard lock{mtx_};
  counts_.erase(key);
}

password_pool::password_pool(std::size_t max_pending)
  : max_pending_(std::max<std::size_t>(max_pending, 1)),
    pending_(std::make_shared<std::atomic<std::size_t>>(0)),
    pool_(std::make_unique<boost::asio::thread_pool>(1)) {}

password_pool::~password_pool() {
  pool_->join();
}

bool password_pool::post(std::function<void()> work) {
  if (pending_->fetch_add(1) >= max_pending_) {
    pending_->fetch_sub(1);
    return false;
  }
  boost::asio::post(*pool_, [pending = pending_, work = std::move(work)] {
    try {
      work(); // answers its own errors; nothing may escape the pool's thread
    } catch (const std::exception& e) {
      spdlog::error("password work failed: {}", e.what());
    }
    pending->fetch_sub(1);
  });
  return true;
}

} // namespace cobble::net
