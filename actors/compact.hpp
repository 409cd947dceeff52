#pragma once

/// Small building blocks that keep the in-memory records compact (issue #8: a million hosts
/// and ten million queued jobs in a few GB).
///
/// - `shared_str`: an immutable string shared by every record that holds the same value
///   (platform and plan class names: a handful of values in millions of results). 16 bytes
///   instead of 32, and no heap per copy.
/// - `boxed<T>`: a value kept on the heap only once it differs from `T{}` (a result's report
///   and credit: empty while it is queued). 8 bytes instead of sizeof(T); reading an empty
///   box sees `T{}`.
///
/// - `heap_optional<T>`: `std::optional<T>` on the heap (8 bytes when empty), for members
///   that few records have (a workunit's link to its work sequence).
///
/// - `shared_value<T>`: an immutable value shared by the records that hold an equal one (the
///   parameters of the workunits of a batch): 16 bytes instead of sizeof(T). Read as `->x`.
///
/// All of them encode exactly as their plain value (`std::string`, `T`), so event payloads and
/// snapshots do not change format because of them.

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace cobble {

class shared_str {
public:
  shared_str() = default;
  shared_str(std::string_view s) : p_(intern(s)) {}   // NOLINT: implicit on purpose
  shared_str(const std::string& s) : p_(intern(s)) {} // NOLINT
  shared_str(const char* s) : p_(intern(s)) {}        // NOLINT

  const std::string& str() const { return p_ ? *p_ : empty_string(); }
  operator const std::string&() const { return str(); } // NOLINT: a drop-in for std::string
  bool empty() const { return str().empty(); }
  std::size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  const char* data() const { return str().data(); }

  friend bool operator==(const shared_str& a, const shared_str& b) {
    return a.p_ == b.p_ || a.str() == b.str();
  }
  friend std::ostream& operator<<(std::ostream& os, const shared_str& s) { return os << s.str(); }

  template <class Encoder>
  void codec_put(Encoder& e) const {
    e.put(str());
  }
  template <class Decoder>
  void codec_get(Decoder& d) {
    std::string s;
    d.get(s);
    *this = shared_str{s};
  }

private:
  /// The shared copy of `s` (null for ""): from a process-wide pool of up to a few thousand
  /// distinct values; past that (a client sending ever new names) a copy of its own.
  static std::shared_ptr<const std::string> intern(std::string_view s);
  static const std::string& empty_string();
  std::shared_ptr<const std::string> p_;
};

template <class T>
class boxed {
public:
  boxed() = default;
  boxed(const T& x) { set(x); } // NOLINT: implicit on purpose
  boxed(const boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  boxed(boxed&&) noexcept = default;
  boxed& operator=(const boxed& o) {
    if (this != &o)
      p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  boxed& operator=(boxed&&) noexcept = default;
  boxed& operator=(const T& x) {
    set(x);
    return *this;
  }
  boxed& operator=(T&& x) {
    set(std::move(x));
    return *this;
  }

  /// The value (`T{}` when empty).
  const T& get() const { return p_ ? *p_ : empty_value(); }
  const T& operator*() const { return get(); }
  const T* operator->() const { return &get(); }
  /// True once a value other than `T{}` was stored.
  bool has_value() const { return p_ != nullptr; }

  friend bool operator==(const boxed& a, const boxed& b) { return a.get() == b.get(); }

  template <class Encoder>
  void codec_put(Encoder& e) const {
    e.put(get());
  }
  template <class Decoder>
  void codec_get(Decoder& d) {
    T x{};
    d.get(x);
    set(std::move(x));
  }

private:
  template <class U>
  void set(U&& x) {
    if (x == empty_value())
      p_.reset();
    else if (p_)
      *p_ = std::forward<U>(x);
    else
      p_ = std::make_unique<T>(std::forward<U>(x));
  }
  static const T& empty_value() {
    static const T e{};
    return e;
  }
  std::unique_ptr<T> p_;
};

template <class T>
class shared_value {
public:
  shared_value() = default;
  shared_value(const T& x) : p_(std::make_shared<const T>(x)) {}       // NOLINT: implicit
  shared_value(T&& x) : p_(std::make_shared<const T>(std::move(x))) {} // NOLINT

  const T& get() const { return p_ ? *p_ : empty_value(); }
  const T& operator*() const { return get(); }
  const T* operator->() const { return &get(); }
  operator const T&() const { return get(); } // NOLINT: reads as the plain value
  /// Shares `other`'s value when it is equal to this one (frees this one's copy).
  void share_if_equal(const shared_value& other) {
    if (p_ != other.p_ && get() == other.get())
      p_ = other.p_;
  }

  friend bool operator==(const shared_value& a, const shared_value& b) {
    return a.p_ == b.p_ || a.get() == b.get();
  }

  template <class Encoder>
  void codec_put(Encoder& e) const {
    e.put(get());
  }
  template <class Decoder>
  void codec_get(Decoder& d) {
    T x{};
    d.get(x);
    p_ = std::make_shared<const T>(std::move(x));
  }

private:
  static const T& empty_value() {
    static const T e{};
    return e;
  }
  std::shared_ptr<const T> p_;
};

template <class T>
class heap_optional {
public:
  heap_optional() = default;
  heap_optional(const T& x) : p_(std::make_unique<T>(x)) {} // NOLINT: implicit on purpose
  heap_optional(const heap_optional& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  heap_optional(heap_optional&&) noexcept = default;
  heap_optional& operator=(const heap_optional& o) {
    if (this != &o)
      p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  heap_optional& operator=(heap_optional&&) noexcept = default;
  heap_optional& operator=(const T& x) {
    p_ = std::make_unique<T>(x);
    return *this;
  }

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  void reset() { p_.reset(); }

  friend bool operator==(const heap_optional& a, const heap_optional& b) {
    return a.p_ == b.p_ || (a.p_ && b.p_ && *a.p_ == *b.p_);
  }

  template <class Encoder>
  void codec_put(Encoder& e) const {
    e.w.put_bool(p_ != nullptr);
    if (p_)
      e.put(*p_);
  }
  template <class Decoder>
  void codec_get(Decoder& d) {
    if (d.r.get_bool()) {
      T x{};
      d.get(x);
      p_ = std::make_unique<T>(std::move(x));
    } else {
      p_.reset();
    }
  }

private:
  std::unique_ptr<T> p_;
};

} // namespace cobble
