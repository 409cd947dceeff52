#pragma once

/// The durable binary codec of Cobble: events and snapshots are written with it.
///
/// Integers are written as fixed-width big-endian (`put_u*`) or as LEB128 varints
/// (`put_varint`, zig-zag for signed). Doubles are their IEEE-754 bit pattern, big-endian.
/// Strings and containers carry a varint length. Structs are encoded field by field through
/// an ADL-found `inspect_fields(f, x)` that calls `f(x.a, x.b, ...)`, or by the type's own
/// `codec_put(encoder&) const` / `codec_get(decoder&)` when it has them; adding a field at the end
/// of a struct is a new payload format version (see actors/events.hpp).
///
/// The reader never throws and never reads past its input: every getter checks the length and,
/// on a short or malformed input, sets a sticky failure flag and returns a zero value.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cobble::storage {

/// Appends encoded values to a string.
class writer {
public:
  explicit writer(std::string& out) : out_(out) {}

  void put_u8(std::uint8_t x) { out_.push_back(static_cast<char>(x)); }
  void put_u16(std::uint16_t x) { put_be(x); }
  void put_u32(std::uint32_t x) { put_be(x); }
  void put_u64(std::uint64_t x) { put_be(x); }
  void put_varint(std::uint64_t x) {
    while (x >= 0x80) {
      out_.push_back(static_cast<char>((x & 0x7f) | 0x80));
      x >>= 7;
    }
    out_.push_back(static_cast<char>(x));
  }
  void put_svarint(std::int64_t x) {
    put_varint((static_cast<std::uint64_t>(x) << 1) ^ static_cast<std::uint64_t>(x >> 63));
  }
  void put_f64(double x) { put_u64(std::bit_cast<std::uint64_t>(x)); }
  void put_bool(bool x) { put_u8(x ? 1 : 0); }
  void put_bytes(std::string_view x) {
    put_varint(x.size());
    out_.append(x.data(), x.size());
  }
  void put_raw(std::string_view x) { out_.append(x.data(), x.size()); }

  std::string& buffer() { return out_; }

private:
  template <class T>
  void put_be(T x) {
    for (int i = sizeof(T) - 1; i >= 0; --i)
      out_.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
  }
  std::string& out_;
};

/// Where a `reader` gets more bytes when its input arrives piece by piece (a snapshot read from
/// the store by another thread while it is decoded): the whole input lies at one address, of
/// which a prefix is ready.
class byte_source {
public:
  virtual ~byte_source() = default;
  /// Blocks until at least `n` bytes of the input are ready or no more will come (the end, or
  /// a failed read); returns how many are ready.
  virtual std::size_t wait_for(std::size_t n) = 0;
};

/// Reads values written by `writer`; bounds-checked, with a sticky failure flag.
class reader {
public:
  explicit reader(std::string_view in) : in_(in), ready_(in.size()) {}
  /// Reads `in` as `src` makes it ready: bytes past `ready` are only read once
  /// `src.wait_for` says they are there. The checks stay on the fast path; waiting is the slow
  /// path of a read that would run past the ready prefix.
  reader(std::string_view in, std::size_t ready, byte_source& src)
    : in_(in), ready_(std::min(ready, in.size())), src_(&src) {}

  std::uint8_t get_u8() { return get_be<std::uint8_t>(); }
  std::uint16_t get_u16() { return get_be<std::uint16_t>(); }
  std::uint32_t get_u32() { return get_be<std::uint32_t>(); }
  std::uint64_t get_u64() { return get_be<std::uint64_t>(); }
  std::uint64_t get_varint() {
    std::uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= ready_ && !more(1))
        return fail<std::uint64_t>();
      auto byte = static_cast<std::uint8_t>(in_[pos_++]);
      result |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0)
        return result;
    }
    return fail<std::uint64_t>();
  }
  std::int64_t get_svarint() {
    auto u = get_varint();
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  double get_f64() { return std::bit_cast<double>(get_u64()); }
  bool get_bool() {
    auto b = get_u8();
    if (b > 1)
      failed_ = true;
    return b == 1;
  }
  std::string_view get_bytes() {
    auto n = get_varint();
    if (failed_ || (n > ready_ - pos_ && !more(n)))
      return fail<std::string_view>();
    auto result = in_.substr(pos_, n);
    pos_ += n;
    return result;
  }
  std::string_view get_raw(std::size_t n) {
    if (n > ready_ - pos_ && !more(n))
      return fail<std::string_view>();
    auto result = in_.substr(pos_, n);
    pos_ += n;
    return result;
  }

  /// True once any read ran past the input or met a malformed value.
  bool failed() const { return failed_; }
  /// Marks the input as malformed (used by decoders that validate values).
  void set_failed() { failed_ = true; }
  /// True when every byte was consumed.
  bool at_end() const { return pos_ == in_.size(); }
  /// Bytes not yet read (of the whole input, ready or not).
  std::size_t remaining() const { return in_.size() - pos_; }

private:
  /// The slow path: true once `n` more bytes from pos_ are ready (never past the input).
  bool more(std::uint64_t n) {
    if (!src_ || n > in_.size() - pos_)
      return false;
    ready_ = std::min(src_->wait_for(pos_ + static_cast<std::size_t>(n)), in_.size());
    return n <= ready_ - pos_;
  }
  template <class T>
  T fail() {
    failed_ = true;
    return T{};
  }
  template <class T>
  T get_be() {
    if (sizeof(T) > ready_ - pos_ && !more(sizeof(T)))
      return fail<T>();
    T x = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      x = static_cast<T>((x << 8) | static_cast<std::uint8_t>(in_[pos_++]));
    return x;
  }
  std::string_view in_;
  std::size_t ready_ = 0; ///< in_[0, ready_) may be read.
  std::size_t pos_ = 0;
  bool failed_ = false;
  byte_source* src_ = nullptr;
};

// -- generic field-wise encoding ----------------------------------------------

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class K, class V, class H, class E, class A>
struct is_map<std::unordered_map<K, V, H, E, A>> : std::true_type {};
template <class T>
struct is_unordered : std::false_type {};
template <class K, class V, class H, class E, class A>
struct is_unordered<std::unordered_map<K, V, H, E, A>> : std::true_type {};
template <class T>
struct is_set : std::false_type {};
template <class T, class C, class A>
struct is_set<std::set<T, C, A>> : std::true_type {};
template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

/// Encodes values into a writer. Call as `enc(a, b, c)`.
struct encoder {
  writer& w;
  /// Format version being written; `inspect_fields` of a versioned struct writes the fields
  /// of that version (255: the newest, as snapshots do).
  std::uint8_t version = 255;

  template <class... Ts>
  void operator()(const Ts&... xs) {
    (put(xs), ...);
  }

  template <class T>
  void put(const T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      w.put_bool(x);
    } else if constexpr (std::is_enum_v<T>) {
      w.put_varint(static_cast<std::uint64_t>(x));
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      w.put_svarint(x);
    } else if constexpr (std::is_integral_v<T>) {
      w.put_varint(x);
    } else if constexpr (std::is_floating_point_v<T>) {
      w.put_f64(static_cast<double>(x));
    } else if constexpr (std::is_same_v<T, std::string>) {
      w.put_bytes(x);
    } else if constexpr (is_optional<T>::value) {
      w.put_bool(x.has_value());
      if (x)
        put(*x);
    } else if constexpr (is_pair<T>::value) {
      put(x.first);
      put(x.second);
    } else if constexpr (is_vector<T>::value || is_set<T>::value) {
      w.put_varint(x.size());
      for (const auto& e : x)
        put(e);
    } else if constexpr (is_map<T>::value) {
      w.put_varint(x.size());
      if constexpr (is_unordered<T>::value) {
        // Hash maps are written in key order so that equal maps encode to equal bytes.
        std::vector<const typename T::value_type*> sorted;
        sorted.reserve(x.size());
        for (const auto& kv : x)
          sorted.push_back(&kv);
        std::sort(sorted.begin(), sorted.end(),
                  [](auto* a, auto* b) { return a->first < b->first; });
        for (auto* kv : sorted) {
          put(kv->first);
          put(kv->second);
        }
      } else {
        for (const auto& [k, v] : x) {
          put(k);
          put(v);
        }
      }
    } else if constexpr (requires { x.codec_put(*this); }) {
      x.codec_put(*this); // a type that encodes itself (e.g. as the plain value it wraps)
    } else {
      inspect_fields(*this, const_cast<T&>(x));
    }
  }
};

/// Decodes values from a reader. Call as `dec(a, b, c)`; check `r.failed()` after.
struct decoder {
  reader& r;
  /// Format version being read; `inspect_fields` of a versioned struct reads only the fields
  /// that version had (255: the newest).
  std::uint8_t version = 255;
  /// Upper bound on any container length, so a corrupt length cannot exhaust memory.
  std::size_t max_elements = std::size_t{1} << 32;

  template <class... Ts>
  void operator()(Ts&... xs) {
    (get(xs), ...);
  }

  template <class T>
  void get(T& x) {
    if (r.failed())
      return;
    if constexpr (std::is_same_v<T, bool>) {
      x = r.get_bool();
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      x = static_cast<T>(r.get_svarint());
    } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
      x = static_cast<T>(r.get_varint());
    } else if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(r.get_f64());
    } else if constexpr (std::is_same_v<T, std::string>) {
      auto bytes = r.get_bytes();
      x.assign(bytes.data(), bytes.size()); // reuses x's capacity when decoding into it again
    } else if constexpr (is_optional<T>::value) {
      if (r.get_bool()) {
        typename T::value_type v{};
        get(v);
        x = std::move(v);
      } else {
        x.reset();
      }
    } else if constexpr (is_pair<T>::value) {
      get(x.first);
      get(x.second);
    } else if constexpr (is_vector<T>::value) {
      auto n = length();
      x.clear();
      x.reserve(n);
      for (std::size_t i = 0; i < n && !r.failed(); ++i) {
        typename T::value_type v{};
        get(v);
        x.push_back(std::move(v));
      }
    } else if constexpr (is_set<T>::value) {
      auto n = length();
      x.clear();
      for (std::size_t i = 0; i < n && !r.failed(); ++i) {
        typename T::value_type v{};
        get(v);
        x.insert(std::move(v));
      }
    } else if constexpr (is_map<T>::value) {
      auto n = length();
      x.clear();
      for (std::size_t i = 0; i < n && !r.failed(); ++i) {
        typename T::key_type k{};
        typename T::mapped_type v{};
        get(k);
        get(v);
        x.emplace(std::move(k), std::move(v));
      }
    } else if constexpr (requires { x.codec_get(*this); }) {
      x.codec_get(*this);
    } else {
      inspect_fields(*this, x);
    }
  }

private:
  std::size_t length() {
    auto n = r.get_varint();
    // Every element takes at least one byte, so a length beyond the remaining input is corrupt.
    if (n > r.remaining() || n > max_elements) {
      r.set_failed();
      return 0;
    }
    return static_cast<std::size_t>(n);
  }
};

/// Encodes one value into a fresh string.
template <class T>
std::string encode(const T& x) {
  std::string out;
  writer w{out};
  encoder enc{w};
  enc.put(x);
  return out;
}

/// Decodes one value; false when the input is malformed or has trailing bytes.
template <class T>
bool decode(std::string_view in, T& x) {
  reader r{in};
  decoder dec{r};
  dec.get(x);
  return !r.failed() && r.at_end();
}

} // namespace cobble::storage
