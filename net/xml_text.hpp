#pragma once

/// XML text primitives shared by every BOINC wire format of net/ (scheduler request and
/// reply, upload header and reply, master page): locale-independent number parsing with the
/// syntax BOINC's own parser accepts, escaping and unescaping, the shortest round-trip number
/// format, a hand writer that lays out one element per line as BOINC does, and a typed reader
/// over pugixml nodes that keeps the first error. Internal to net/; pure functions only.

#include <pugixml.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace cobble::net::xml {

// -- text --------------------------------------------------------------------------------

/// True for the six characters isspace() knows in the C locale.
bool is_space(char c);

/// `s` without leading and trailing white space.
std::string_view trim(std::string_view s);

/// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence (the client reads C
/// strings, and a broken sequence would make the XML invalid).
void cap_utf8(std::string& s, std::size_t max);

/// `s` with every byte that does not start or belong to a well-formed UTF-8 sequence
/// (overlong forms, surrogates and code points over U+10FFFF included) replaced by U+FFFD,
/// one replacement per maximal ill-formed part (as the Unicode standard recommends).
std::string valid_utf8(std::string_view s);

/// Decodes the five predefined XML entities and ASCII numeric character references (for the
/// line-oriented upload header, which never goes through pugixml). Anything else, including a
/// lone '&', stays as it is.
std::string unescape(std::string_view s);

/// Appends `s` escaped for XML text or attribute values. Control characters other than tab,
/// newline and carriage return are dropped: they are not XML and the client reads C strings.
void append_escaped(std::string& out, std::string_view s);

// -- numbers -----------------------------------------------------------------------------

/// Readies number text for from_chars: trims it and drops one leading '+' (strtod and strtol
/// accept it, from_chars does not). False when the text cannot be a number ("+", "+-1",
/// "++1"); empty text stays empty, and the callers read it as 0.
bool number_text(std::string_view& s);

/// Parses a floating-point number with strtod syntax, without depending on the locale.
/// Surrounding white space is allowed; empty text is 0 (as BOINC's parser has it). NaN and
/// infinities are accepted; out-of-range values become ±HUGE_VAL or a tiny value, as strtod.
bool to_double(std::string_view s, double& out);

/// Parses a base-10 integer that must fit `I` exactly (no fraction, no trailing junk).
/// Surrounding white space is allowed; empty text is 0.
template <class I>
bool to_integer(std::string_view s, I& out) {
  if (!number_text(s))
    return false;
  if (s.empty()) {
    out = 0;
    return true;
  }
  I v{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc{} || ptr != s.data() + s.size())
    return false;
  out = v;
  return true;
}

/// Appends the shortest text that reads back as exactly `v`; non-finite values, which BOINC
/// cannot use, become 0.
void append_number(std::string& out, double v);

/// Appends `v` in base 10.
template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
void append_number(std::string& out, I v) {
  char buf[32];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, ptr);
}

// -- writer ------------------------------------------------------------------------------

/// A hand XML writer: one element per line, indented by four spaces per nesting level, the
/// layout BOINC servers and clients write (the client finds a reply's root by its tags on
/// lines of their own).
class writer {
public:
  /// The document written so far; move it out when done.
  std::string s;

  /// `<tag>` on a line of its own; what follows is nested one level deeper.
  void open(std::string_view tag);
  /// `</tag>` on a line of its own, one level up.
  void close(std::string_view tag);
  /// `<tag>value</tag>`, the value escaped.
  void text(std::string_view tag, std::string_view value);
  /// `<tag>value</tag>` with append_number()'s format.
  template <class N>
  void number(std::string_view tag, N value) {
    start(tag);
    append_number(s, value);
    end(tag);
  }
  /// `<tag>`, the escaped value on a line of its own, `</tag>` (how BOINC writes signatures).
  void block(std::string_view tag, std::string_view value);
  /// `<tag/>` when `on`, nothing otherwise (BOINC's booleans).
  void flag(std::string_view tag, bool on);
  /// The indented `<tag>` of an element whose content the caller appends to `s`; `tag` may
  /// carry attributes.
  void start(std::string_view tag);
  /// `</tag>` and the end of the line, after start().
  void end(std::string_view tag);

private:
  int depth_ = 0;
  void indent();
};

// -- reader ------------------------------------------------------------------------------

/// Reads typed values out of pugixml nodes and remembers the first error, naming the
/// element's path and the offending text, so a parser can read on and fail once at the end.
class reader {
public:
  /// The first error, empty while there is none.
  std::string error;

  /// Bytes a text value keeps at most (str(): cut on a UTF-8 boundary); the scheduler
  /// request sets it (max_request_text_bytes), the client-side parsers leave it open.
  std::size_t max_text = static_cast<std::size_t>(-1);

  /// True once a value did not parse.
  bool failed() const { return !error.empty(); }

  /// The element's character data (its first text child), not trimmed.
  static std::string_view content(const pugi::xml_node& n) { return n.child_value(); }

  /// The trimmed text of `n`, invalid UTF-8 replaced (valid_utf8()), at most max_text bytes.
  void str(const pugi::xml_node& n, std::string& out) {
    out = valid_utf8(trim(content(n)));
    cap_utf8(out, max_text);
  }

  /// A finite floating-point number (to_double()); NaN and infinities are refused: nothing
  /// in BOINC's protocols is one, and a NaN is unequal to itself wherever it is kept.
  void num(const pugi::xml_node& n, double& out) {
    if (!to_double(content(n), out))
      fail(n, "a number");
    else if (!std::isfinite(out))
      fail(n, "a finite number");
  }

  /// An integer that must fit `I` (to_integer()).
  template <class I>
  void integer(const pugi::xml_node& n, I& out) {
    if (!to_integer(content(n), out))
      fail(n, std::is_signed_v<I> ? "an integer" : "a non-negative integer");
  }

  /// A BOINC boolean: true for `<x/>` or any non-zero number, false for `<x>0</x>`.
  void boolean(const pugi::xml_node& n, bool& out);

  /// Records "bad value in PATH: 'TEXT' is not WHAT" unless an error is already recorded.
  void fail(const pugi::xml_node& n, const char* what);
};

/// The content of `n` as text: child elements verbatim, CDATA sections unwrapped, character
/// data entity-decoded; invalid UTF-8 replaced (valid_utf8()); capped at `max` bytes on a
/// UTF-8 boundary (`<stderr_out>`).
std::string markup_text(const pugi::xml_node& n, std::size_t max);

} // namespace cobble::net::xml
