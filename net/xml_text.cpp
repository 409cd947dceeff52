#include "net/xml_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace cobble::net::xml {

// -- text --------------------------------------------------------------------------------

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

void cap_utf8(std::string& s, std::size_t max) {
  if (s.size() <= max)
    return;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
    --cut;
  s.resize(cut);
}

std::string valid_utf8(std::string_view s) {
  // The common case, ASCII only, is returned as it is.
  if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return std::string(s);
  constexpr std::string_view replacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    unsigned char c = byte(i);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // The sequence's length and the range of its second byte (Unicode Table 3-7).
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0)
        lo = 0xA0;
      else if (c == 0xED)
        hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0)
        lo = 0x90;
      else if (c == 0xF4)
        hi = 0x8F;
    }
    if (len == 0) {
      out += replacement;
      ++i;
      continue;
    }
    std::size_t k = 1;
    for (; k < len && i + k < s.size(); ++k) {
      unsigned char b = byte(i + k);
      bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
      if (!ok)
        break;
    }
    if (k == len) {
      out.append(s.substr(i, len));
    } else {
      out += replacement;
    }
    i += k;
  }
  return out;
}

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    auto semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += s[i];
      continue;
    }
    auto ent = s.substr(i + 1, semi - i - 1);
    char c = 0;
    if (ent == "amp")
      c = '&';
    else if (ent == "lt")
      c = '<';
    else if (ent == "gt")
      c = '>';
    else if (ent == "quot")
      c = '"';
    else if (ent == "apos")
      c = '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      unsigned code = 0;
      auto digits = ent.substr(1);
      int base = 10;
      if (!digits.empty() && (digits[0] == 'x' || digits[0] == 'X')) {
        base = 16;
        digits.remove_prefix(1);
      }
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), code, base);
      if (ec == std::errc{} && p == digits.data() + digits.size() && code > 0 && code < 128)
        c = static_cast<char>(code);
    }
    if (c == 0) {
      out += s[i];
      continue;
    }
    out += c;
    i = semi;
  }
  return out;
}

void append_escaped(std::string& out, std::string_view s) {
  // Runs of characters that need nothing are appended whole (most values are such a run).
  auto plain = [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 ? (ch != '&' && ch != '<' && ch != '>' && ch != '"' && ch != '\'')
                     : (ch == '\t' || ch == '\n' || ch == '\r');
  };
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t run = i;
    while (run < s.size() && plain(s[run]))
      ++run;
    out.append(s.data() + i, run - i);
    if (run == s.size())
      break;
    switch (s[run]) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default: // other control characters are left out
        break;
    }
    i = run + 1;
  }
}

// -- numbers -----------------------------------------------------------------------------

bool number_text(std::string_view& s) {
  s = trim(s);
  if (s.empty() || s.front() != '+')
    return true;
  s.remove_prefix(1);
  return !s.empty() && s.front() != '-' && s.front() != '+';
}

bool to_double(std::string_view s, double& out) {
  if (!number_text(s))
    return false;
  if (s.empty()) {
    out = 0;
    return true;
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ptr != s.data() + s.size())
    return false;
  if (ec == std::errc::result_out_of_range) {
    // Overflow or underflow: strtod gives ±HUGE_VAL or a tiny value; do the same.
    std::string copy(s);
    v = std::strtod(copy.c_str(), nullptr);
  } else if (ec != std::errc{}) {
    return false;
  }
  out = v;
  return true;
}

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += '0';
    return;
  }
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc{}) { // cannot happen with 64 bytes; keep the output well-formed anyway
    out += '0';
    return;
  }
  out.append(buf, ptr);
}

// -- writer ------------------------------------------------------------------------------

void writer::open(std::string_view tag) {
  indent();
  s += '<';
  s += tag;
  s += ">\n";
  ++depth_;
}

void writer::close(std::string_view tag) {
  --depth_;
  indent();
  s += "</";
  s += tag;
  s += ">\n";
}

void writer::text(std::string_view tag, std::string_view value) {
  start(tag);
  append_escaped(s, value);
  end(tag);
}

void writer::block(std::string_view tag, std::string_view value) {
  open(tag);
  append_escaped(s, value);
  s += '\n';
  close(tag);
}

void writer::flag(std::string_view tag, bool on) {
  if (!on)
    return;
  indent();
  s += '<';
  s += tag;
  s += "/>\n";
}

void writer::start(std::string_view tag) {
  indent();
  s += '<';
  s += tag;
  s += '>';
}

void writer::end(std::string_view tag) {
  s += "</";
  s += tag;
  s += ">\n";
}

void writer::indent() {
  s.append(static_cast<std::size_t>(depth_) * 4, ' ');
}

// -- reader ------------------------------------------------------------------------------

void reader::boolean(const pugi::xml_node& n, bool& out) {
  double v = 0;
  if (!to_double(content(n), v)) {
    fail(n, "a boolean (empty, 0 or 1)");
    return;
  }
  // `<x/>` has empty text, which to_double reads as 0: presence alone means true.
  out = trim(content(n)).empty() || v != 0;
}

void reader::fail(const pugi::xml_node& n, const char* what) {
  if (failed())
    return;
  auto t = trim(content(n));
  std::string shown(t.substr(0, 40));
  if (t.size() > 40)
    shown += "...";
  error = valid_utf8("bad value in " + n.path() + ": '" + shown + "' is not " + what);
}

namespace {

/// pugixml writer that appends to a std::string.
struct string_writer : pugi::xml_writer {
  std::string& out;
  explicit string_writer(std::string& o) : out(o) {}
  void write(const void* data, std::size_t size) override {
    out.append(static_cast<const char*>(data), size);
  }
};

} // namespace

std::string markup_text(const pugi::xml_node& n, std::size_t max) {
  std::string out;
  string_writer w(out);
  for (auto c = n.first_child(); c; c = c.next_sibling()) {
    switch (c.type()) {
      case pugi::node_pcdata:
      case pugi::node_cdata:
        out += c.value();
        break;
      case pugi::node_element:
        c.print(w, "", pugi::format_raw);
        break;
      default:
        break;
    }
    if (out.size() > max)
      break;
  }
  out = valid_utf8(out);
  cap_utf8(out, max);
  return out;
}

} // namespace cobble::net::xml
