#include "storage/codec.hpp"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

using namespace cobble::storage;

namespace codec_test {

enum class color : std::uint8_t { red = 1, green = 2, blue = 200 };

struct inner {
  std::int32_t a = 0;
  std::string b;
  friend bool operator==(const inner&, const inner&) = default;
};

template <class F>
void inspect_fields(F& f, inner& x) {
  f(x.a, x.b);
}

struct outer {
  std::uint64_t id = 0;
  color c = color::red;
  bool flag = false;
  double d = 0;
  std::vector<inner> items;
  std::map<std::string, std::vector<std::int64_t>> index;
  std::optional<inner> maybe;
  std::optional<std::string> none;
  std::set<std::uint16_t> tags;
  std::pair<std::int8_t, std::string> pair;
  friend bool operator==(const outer&, const outer&) = default;
};

template <class F>
void inspect_fields(F& f, outer& x) {
  f(x.id, x.c, x.flag, x.d, x.items, x.index, x.maybe, x.none, x.tags, x.pair);
}

} // namespace codec_test

using codec_test::outer;

namespace {

template <class T>
T round_trip(const T& x) {
  T y{};
  REQUIRE(decode(encode(x), y));
  return y;
}

outer sample() {
  outer x;
  x.id = 0xfedcba9876543210ull;
  x.c = codec_test::color::blue;
  x.flag = true;
  x.d = -2.5;
  x.items = {{-1, "one"}, {std::numeric_limits<std::int32_t>::min(), std::string("t\0o", 3)}};
  x.index = {{"a", {1, -2, 3}}, {"", {}}};
  x.maybe = codec_test::inner{7, "seven"};
  x.tags = {1, 300, 65535};
  x.pair = {-128, "pair"};
  return x;
}

} // namespace

TEST_CASE("codec round-trips integers at their limits", "[storage][codec]") {
  for (std::int64_t v :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, std::int64_t{63}, std::int64_t{-64},
        std::int64_t{64}, std::int64_t{-65}, std::numeric_limits<std::int64_t>::min(),
        std::numeric_limits<std::int64_t>::max()})
    CHECK(round_trip(v) == v);
  for (std::uint64_t v : {std::uint64_t{0}, std::uint64_t{127}, std::uint64_t{128},
                          std::numeric_limits<std::uint64_t>::max()})
    CHECK(round_trip(v) == v);
  CHECK(round_trip(std::numeric_limits<std::int8_t>::min()) == -128);
  CHECK(round_trip(std::numeric_limits<std::int32_t>::min())
        == std::numeric_limits<std::int32_t>::min());
  CHECK(round_trip(std::numeric_limits<std::uint16_t>::max()) == 65535);
  CHECK(round_trip(true));
  CHECK_FALSE(round_trip(false));
  CHECK(encode(std::uint64_t{127}).size() == 1);
  CHECK(encode(std::int64_t{-1}).size() == 1); // zig-zag keeps small negatives small
  CHECK(encode(std::numeric_limits<std::uint64_t>::max()).size() == 10);
}

TEST_CASE("codec fixed-width writers are big-endian", "[storage][codec]") {
  std::string out;
  writer w{out};
  w.put_u16(0x0102);
  w.put_u32(0x03040506);
  w.put_u64(0x0708090a0b0c0d0eull);
  CHECK(out == "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e");
  reader r{out};
  CHECK(r.get_u16() == 0x0102);
  CHECK(r.get_u32() == 0x03040506u);
  CHECK(r.get_u64() == 0x0708090a0b0c0d0eull);
  CHECK(r.at_end());
  CHECK_FALSE(r.failed());
}

TEST_CASE("codec round-trips doubles bit for bit", "[storage][codec]") {
  auto bits = [](double d) { return std::bit_cast<std::uint64_t>(d); };
  auto payload_nan = std::bit_cast<double>(std::uint64_t{0x7ff8000000000123ull});
  for (double d :
       {0.0, -0.0, 1.5, -1e308, std::numeric_limits<double>::denorm_min(),
        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN(), payload_nan})
    CHECK(bits(round_trip(d)) == bits(d));
  CHECK(std::signbit(round_trip(-0.0)));
  CHECK(round_trip(1.25f) == 1.25f);
}

TEST_CASE("codec round-trips strings with NULs", "[storage][codec]") {
  std::string s("a\0b\0\0c", 6);
  CHECK(round_trip(s) == s);
  CHECK(round_trip(std::string{}).empty());
  std::string big(100000, '\0');
  CHECK(round_trip(big) == big);
}

TEST_CASE("codec round-trips containers, optionals and nested structs", "[storage][codec]") {
  auto x = sample();
  CHECK(round_trip(x) == x);
  std::unordered_map<std::uint32_t, std::string> um{{1, "x"}, {2, ""}, {3, "zzz"}};
  CHECK(round_trip(um) == um);
  // Hash maps encode in key order, so equal maps give equal bytes whatever their history.
  std::unordered_map<std::uint32_t, std::string> um2;
  for (std::uint32_t k : {3u, 1u, 2u})
    um2.emplace(k, um.at(k));
  CHECK(encode(um2) == encode(um));
  CHECK(encode(um) == encode(std::map<std::uint32_t, std::string>(um.begin(), um.end())));
  std::optional<std::int64_t> empty;
  CHECK_FALSE(round_trip(empty).has_value());
  std::vector<std::optional<std::vector<std::string>>> nested{std::nullopt,
                                                              std::vector<std::string>{"a", ""}};
  CHECK(round_trip(nested) == nested);
}

TEST_CASE("codec decode fails cleanly on truncated input", "[storage][codec]") {
  auto bytes = encode(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    outer y;
    CHECK_FALSE(decode(std::string_view{bytes}.substr(0, n), y));
  }
  outer y;
  CHECK_FALSE(decode(bytes + "x", y)); // trailing bytes
}

TEST_CASE("codec decode fails cleanly on garbage", "[storage][codec]") {
  SECTION("a huge container length is refused before allocating") {
    std::string in;
    writer w{in};
    w.put_varint(std::uint64_t{1} << 40);
    w.put_raw("abc");
    std::vector<std::uint64_t> v;
    CHECK_FALSE(decode(in, v));
    CHECK(v.empty());
    std::map<std::string, std::string> m;
    CHECK_FALSE(decode(in, m));
    std::set<std::int32_t> s;
    CHECK_FALSE(decode(in, s));
    std::string str;
    CHECK_FALSE(decode(in, str));
  }
  SECTION("max_elements bounds containers") {
    auto in = encode(std::vector<std::uint8_t>{1, 2, 3});
    reader r{in};
    decoder dec{r};
    dec.max_elements = 2;
    std::vector<std::uint8_t> v;
    dec(v);
    CHECK(r.failed());
  }
  SECTION("an overlong varint is refused") {
    std::string in(11, '\xff');
    std::uint64_t x = 1;
    CHECK_FALSE(decode(in, x));
    CHECK(x == 0);
  }
  SECTION("a bool other than 0 or 1 is refused") {
    bool b = false;
    CHECK_FALSE(decode(std::string(1, '\x02'), b));
  }
  SECTION("reads past the end return zero and stay failed") {
    reader r{"\x01"};
    CHECK(r.get_u32() == 0);
    CHECK(r.failed());
    CHECK(r.get_u8() == 1); // position unchanged by the failed read
    CHECK(r.failed());      // but the flag is sticky
    CHECK(r.get_raw(5).empty());
    CHECK(r.get_bytes().empty());
  }
  SECTION("random bytes never crash the decoder") {
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 2000; ++round) {
      std::string in;
      auto len = static_cast<std::size_t>(round % 64);
      for (std::size_t i = 0; i < len; ++i) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        in.push_back(static_cast<char>(state));
      }
      outer y;
      static_cast<void>(decode(in, y)); // must not crash, throw or allocate wildly
    }
    SUCCEED();
  }
}
