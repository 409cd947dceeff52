#pragma once

// Test support: a seeded random mutator for the parsers' fuzz tests (tests/net/fuzz_test.cpp).
//
// Each iteration gets its own std::mt19937_64 seeded with `base_seed + iteration`, so a
// failure names one seed and COBBLE_FUZZ_SEED=that-seed replays exactly that input. The
// mutations are those that broke parsers before: bit flips, inserted and deleted bytes,
// duplicated chunks, truncation, splices of two corpus entries, numbers replaced by extremes
// (nan, inf, 1e400, -1, 2^64), overlong strings, invalid UTF-8 and deep nesting.

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::test {

/// The syntax of the inputs, for the nesting mutation.
enum class syntax { xml, json };

/// One checked-in corpus entry.
struct corpus_entry {
  std::string name; ///< File name, e.g. "work_batch.json".
  std::string text; ///< Its bytes.
};

/// The files of tests/fuzz/corpus/`target`/, sorted by name; throws when there are none.
inline std::vector<corpus_entry> load_corpus(const std::filesystem::path& dir) {
  std::vector<corpus_entry> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file())
      continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    out.push_back({e.path().filename().string(), ss.str()});
  }
  if (out.empty())
    throw std::runtime_error("empty fuzz corpus: " + dir.string());
  std::sort(out.begin(), out.end(),
            [](const corpus_entry& a, const corpus_entry& b) { return a.name < b.name; });
  return out;
}

/// Iterations per target: COBBLE_FUZZ_ITERATIONS when set to a positive number, else `fallback`.
inline std::uint64_t fuzz_iterations(std::uint64_t fallback) {
  const char* s = std::getenv("COBBLE_FUZZ_ITERATIONS");
  if (s == nullptr || *s == '\0')
    return fallback;
  auto n = std::strtoull(s, nullptr, 10);
  return n > 0 ? n : fallback;
}

/// COBBLE_FUZZ_SEED when set (replay one iteration), else 0.
inline std::uint64_t fuzz_replay_seed() {
  const char* s = std::getenv("COBBLE_FUZZ_SEED");
  return s == nullptr ? 0 : std::strtoull(s, nullptr, 0);
}

/// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
/// Written here, apart from the server's valid_utf8(), so that the check is independent.
inline bool is_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    std::uint32_t min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1fu, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0fu, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07u, min = 0x10000;
    } else {
      return false;
    }
    if (i + n >= s.size())
      return false;
    for (std::size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80)
        return false;
      cp = (cp << 6) | (d & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

/// `s` for a failure message: printable ASCII as is, other bytes as \xNN, at most `max` bytes.
inline std::string printable(std::string_view s, std::size_t max = 4096) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if ((c >= 0x20 && c < 0x7f) || c == '\n') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  if (s.size() > max)
    out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

/// Mutates corpus entries with one seeded generator.
class mutator {
public:
  mutator(std::uint64_t seed, syntax kind) : rng_(seed), kind_(kind) {}

  /// A uniformly drawn integer in [0, n); 0 when n is 0.
  std::size_t below(std::size_t n) {
    if (n == 0)
      return 0;
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

  /// One to four stacked mutations of `input`; `other` is the partner of a splice.
  std::string mutate(std::string input, std::string_view other) {
    auto rounds = 1 + below(4);
    for (std::size_t i = 0; i < rounds; ++i)
      input = mutate_once(std::move(input), other);
    return input;
  }

private:
  std::mt19937_64 rng_;
  syntax kind_;

  static constexpr std::array<std::string_view, 24> extremes
    = {"nan",
       "NaN",
       "inf",
       "-inf",
       "1e400",
       "-1e400",
       "1e-400",
       "-1",
       "-0",
       "18446744073709551616",
       "18446744073709551615",
       "9223372036854775808",
       "-9223372036854775809",
       "2147483648",
       "-2147483649",
       "4294967296",
       "0x10",
       "1.5",
       "",
       "+",
       "-",
       "1e",
       "00000000000000000000000000000000000000001",
       "99999999999999999999e99"};

  static constexpr std::array<std::string_view, 10> bad_utf8
    = {"\xc3",         "\xe2\x82",         "\xf0\x9f\x98",         "\xc0\xaf", "\xe0\x80\xaf",
       "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "\xff\xfe", "\x80"};

  static constexpr std::array<std::string_view, 12> tokens = {"<",         ">",    "&",
                                                              "&amp;",     "&#0;", "&#xFFFFFFFF;",
                                                              "<![CDATA[", "]]>",  "\"",
                                                              "\\u0000",   "\n",   "<data>\n"};

  std::string mutate_once(std::string s, std::string_view other) {
    switch (below(12)) {
      case 0: // flip one bit
        if (!s.empty()) {
          auto& c = s[below(s.size())];
          c = static_cast<char>(static_cast<unsigned char>(c) ^ (1u << below(8)));
        }
        return s;
      case 1: // insert a random byte or a token
        if (below(2) == 0)
          s.insert(below(s.size() + 1), 1, static_cast<char>(below(256)));
        else
          s.insert(below(s.size() + 1), tokens.at(below(tokens.size())));
        return s;
      case 2: { // delete a range
        auto at = below(s.size() + 1);
        s.erase(at, 1 + below(16));
        return s;
      }
      case 3: { // duplicate a chunk
        auto at = below(s.size() + 1);
        auto chunk = s.substr(at, 1 + below(256));
        auto times = 1 + below(8);
        std::string rep;
        for (std::size_t i = 0; i < times; ++i)
          rep += chunk;
        s.insert(below(s.size() + 1), rep);
        return s;
      }
      case 4: // truncate
        s.resize(below(s.size() + 1));
        return s;
      case 5: // splice: a prefix of this entry, a suffix of the other
        return s.substr(0, below(s.size() + 1))
               + std::string{other.substr(below(other.size() + 1))};
      case 6:
      case 7:
        return replace_number(std::move(s));
      case 8:
        return replace_value(std::move(s));
      case 9: // invalid UTF-8
        s.insert(below(s.size() + 1), bad_utf8.at(below(bad_utf8.size())));
        return s;
      case 10:
        return nest(std::move(s));
      default: // repeat one line (a second <data>, a second element of the same name)
        return repeat_line(std::move(s));
    }
  }

  /// Replaces one run of digits (with its sign, fraction and exponent) by an extreme.
  std::string replace_number(std::string s) {
    std::vector<std::size_t> starts;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (std::isdigit(static_cast<unsigned char>(s[i])) != 0
          && (i == 0 || std::isdigit(static_cast<unsigned char>(s[i - 1])) == 0))
        starts.push_back(i);
    if (starts.empty())
      return s;
    auto at = starts[below(starts.size())];
    auto end = at;
    while (end < s.size()
           && std::string_view("0123456789.eE+-").find(s[end]) != std::string_view::npos)
      ++end;
    if (at > 0 && s[at - 1] == '-')
      --at;
    s.replace(at, end - at, extremes.at(below(extremes.size())));
    return s;
  }

  /// A long text: ASCII, multi-byte characters (so that a cut can land inside one), or both.
  std::string long_text() {
    static constexpr std::array<std::size_t, 5> lengths = {254, 255, 256, 1000, 70000};
    auto n = lengths.at(below(lengths.size()));
    std::string out;
    switch (below(3)) {
      case 0:
        out.assign(n, 'A');
        break;
      case 1:
        while (out.size() < n)
          out += "\xc3\xa9"; // é
        break;
      default:
        out.assign(n - 1, 'B');
        out += "\xe2\x82\xac\xf0\x9f\x98\x80"; // € and an emoji across the cut
        break;
    }
    return out;
  }

  /// Replaces the text of one XML element or one JSON string by a long text or an extreme.
  std::string replace_value(std::string s) {
    const char open = kind_ == syntax::xml ? '>' : '"';
    const char close = kind_ == syntax::xml ? '<' : '"';
    std::vector<std::size_t> opens;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s[i] == open)
        opens.push_back(i + 1);
    if (opens.empty())
      return s;
    auto at = opens[below(opens.size())];
    auto end = s.find(close, at);
    if (end == std::string::npos)
      end = s.size();
    std::string value = below(2) == 0 ? long_text()
                                      : std::string{extremes.at(below(extremes.size()))};
    s.replace(at, end - at, value);
    return s;
  }

  /// Wraps a point of the input in deep nesting: <a><a>...</a></a> or [[[...]]], {"a":{...}}.
  std::string nest(std::string s) {
    static constexpr std::array<std::size_t, 4> depths = {10, 1000, 10000, 100000};
    auto depth = depths.at(below(depths.size()));
    bool closed = below(4) != 0;
    std::string open, close;
    if (kind_ == syntax::xml) {
      open = "<a>", close = "</a>";
    } else if (below(2) == 0) {
      open = "[", close = "]";
    } else {
      open = "{\"a\":", close = "}";
    }
    std::string out;
    out.reserve(depth * (open.size() + close.size()) + 8);
    for (std::size_t i = 0; i < depth; ++i)
      out += open;
    out += kind_ == syntax::xml ? "x" : "1";
    if (closed)
      for (std::size_t i = 0; i < depth; ++i)
        out += close;
    s.insert(below(s.size() + 1), out);
    return s;
  }

  std::string repeat_line(std::string s) {
    auto at = below(s.size() + 1);
    auto begin = s.rfind('\n', at == 0 ? 0 : at - 1);
    begin = begin == std::string::npos ? 0 : begin + 1;
    auto end = s.find('\n', at);
    end = end == std::string::npos ? s.size() : end + 1;
    s.insert(below(s.size() + 1), s.substr(begin, end - begin));
    return s;
  }
};

} // namespace cobble::test
