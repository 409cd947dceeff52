#include "storage/keys.hpp"

#include <boost/crc.hpp>

#include <catch2/catch.hpp>

#include <limits>
#include <random>
#include <string>

using namespace cobble::storage;

TEST_CASE("event keys round-trip and sort numerically", "[storage][keys]") {
  const std::uint64_t seqs[]
    = {0, 1, 255, 256, 65535, 65536, 1ull << 32, std::numeric_limits<std::uint64_t>::max()};
  std::string previous;
  for (auto seq : seqs) {
    auto key = event_key{seq}.encode();
    REQUIRE(key.size() == event_key::size);
    CHECK(static_cast<std::uint8_t>(key[0]) == static_cast<std::uint8_t>(key_prefix::event));
    auto back = event_key::decode(key);
    REQUIRE(back);
    CHECK(back->seq == seq);
    if (!previous.empty())
      CHECK(previous < key); // bytewise, as RocksDB's default comparator
    previous = key;
  }
  CHECK(event_key{256}.encode() == std::string("\x10\0\0\0\0\0\0\x01\0", 9));
}

TEST_CASE("snapshot keys round-trip and sort by seq then chunk", "[storage][keys]") {
  snapshot_chunk_key a{255, 7};
  snapshot_chunk_key b{256, 0};
  snapshot_chunk_key c{256, 256};
  CHECK(a.encode() < b.encode());
  CHECK(b.encode() < c.encode());
  auto back = snapshot_chunk_key::decode(c.encode());
  REQUIRE(back);
  CHECK(back->seq == 256);
  CHECK(back->chunk == 256);
  CHECK(c.encode().substr(0, 9) == snapshot_chunk_key::seq_prefix(256));
  auto m = snapshot_manifest_key::decode(snapshot_manifest_key{65536}.encode());
  REQUIRE(m);
  CHECK(m->seq == 65536);
  // Every manifest sorts after every chunk.
  CHECK(snapshot_chunk_key{std::numeric_limits<std::uint64_t>::max(), 0xffffffff}.encode()
        < snapshot_manifest_key{0}.encode());
}

TEST_CASE("key decoders reject wrong lengths and prefixes", "[storage][keys]") {
  auto key = event_key{42}.encode();
  CHECK_FALSE(event_key::decode(""));
  CHECK_FALSE(event_key::decode(key.substr(0, 8)));
  CHECK_FALSE(event_key::decode(key + "x"));
  CHECK_FALSE(event_key::decode(snapshot_manifest_key{42}.encode())); // same length, other prefix
  auto chunk = snapshot_chunk_key{1, 2}.encode();
  CHECK_FALSE(snapshot_chunk_key::decode(chunk.substr(0, 12)));
  CHECK_FALSE(snapshot_chunk_key::decode(snapshot_chunk_key::seq_prefix(1)));
  CHECK_FALSE(snapshot_manifest_key::decode(event_key{42}.encode()));
  CHECK_FALSE(snapshot_manifest_key::decode(std::string(1, '\x21')));
  CHECK(format_version_key::matches(format_version_key::encode()));
  CHECK_FALSE(format_version_key::matches(std::string("\x01\x00", 2)));
}

TEST_CASE("format version and manifest values round-trip", "[storage][keys]") {
  auto v = format_version_value::decode(format_version_value::encode(current_format_version));
  REQUIRE(v);
  CHECK(*v == current_format_version);
  CHECK_FALSE(format_version_value::decode("abc"));
  snapshot_manifest m{3, 12345678901ull, 0xdeadbeef};
  auto encoded = m.encode();
  CHECK(encoded.size() == snapshot_manifest::size);
  auto back = snapshot_manifest::decode(encoded);
  REQUIRE(back);
  CHECK(*back == m);
  CHECK_FALSE(snapshot_manifest::decode(encoded.substr(0, 16)));
  CHECK_FALSE(snapshot_manifest::decode(""));
  encoded[0] = 3; // unknown manifest version
  CHECK_FALSE(snapshot_manifest::decode(encoded));
}

TEST_CASE("file snapshot manifests and file names round-trip", "[storage][keys]") {
  // An old (chunked) manifest still decodes as one.
  std::string old_manifest("\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x05\x12\x34\x56\x78",
                           17);
  auto old = snapshot_manifest::decode(old_manifest);
  REQUIRE(old);
  CHECK(old->storage == snapshot_storage::chunks);
  CHECK(old->chunks == 2);
  CHECK(old->bytes == 5);
  CHECK(old->crc == 0x12345678);
  CHECK(old->encode() == old_manifest);

  snapshot_manifest m;
  m.storage = snapshot_storage::file;
  m.bytes = 1'800'000'000'000ull;
  m.crc = 0xcafef00d;
  m.generation = 3;
  auto encoded = m.encode();
  CHECK(encoded.size() == snapshot_manifest::file_size);
  CHECK(static_cast<std::uint8_t>(encoded[0]) == snapshot_manifest::file_version);
  auto back = snapshot_manifest::decode(encoded);
  REQUIRE(back);
  CHECK(*back == m);
  CHECK_FALSE(snapshot_manifest::decode(encoded.substr(0, 20)));
  CHECK_FALSE(snapshot_manifest::decode(encoded + "x"));

  CHECK(snapshot_file_name(1234, 0) == "00000000000000001234-0.snap");
  CHECK(snapshot_file_name(UINT64_MAX, 12) == "18446744073709551615-12.snap");
  CHECK(snapshot_file_name(9, 0) < snapshot_file_name(10, 0)); // names sort by seq
  auto id = parse_snapshot_file_name("00000000000000001234-17.snap");
  REQUIRE(id);
  CHECK(*id == snapshot_file_id{1234, 17});
  CHECK(parse_snapshot_file_name(snapshot_file_name(UINT64_MAX, UINT64_MAX))
        == snapshot_file_id{UINT64_MAX, UINT64_MAX});
  for (const char* bad :
       {"", "1234-0.snap", "00000000000000001234-0.snap.tmp", "00000000000000001234-00.snap",
        "00000000000000001234-.snap", "00000000000000001234_0.snap", "0000000000000000123x-0.snap",
        "00000000000000001234-0.snp", "99999999999999999999-0.snap", "notes.txt"})
    CHECK_FALSE(parse_snapshot_file_name(bad));
}

TEST_CASE("event values round-trip and detect damage", "[storage][keys]") {
  event_record x;
  x.time_us = -1234567;
  x.kind = 0xbeef;
  x.entity_kind = 3;
  x.project = 513;
  x.entity_id = 0x0102030405060708ull;
  x.payload = std::string("\x01pay\0load", 9);
  auto value = event_value::encode(x);
  REQUIRE(value.size() == event_value::header_size + x.payload.size());
  // The documented layout, byte for byte.
  CHECK(value[0] == 1);
  CHECK(value.substr(9, 2) == "\xbe\xef");
  CHECK(static_cast<std::uint8_t>(value[11]) == 3);
  CHECK(value.substr(12, 2) == std::string("\x02\x01", 2));
  CHECK(value.substr(14, 8) == "\x01\x02\x03\x04\x05\x06\x07\x08");
  CHECK(value.substr(26) == x.payload);

  event_value_error why = event_value_error::checksum_mismatch;
  auto back = event_value::decode(77, value, &why);
  REQUIRE(back);
  CHECK(why == event_value_error::none);
  x.seq = 77;
  CHECK(*back == x);

  SECTION("a flipped payload bit fails the checksum") {
    value.back() ^= 0x10;
    CHECK_FALSE(event_value::decode(77, value, &why));
    CHECK(why == event_value_error::checksum_mismatch);
  }
  SECTION("a short value is truncated") {
    CHECK_FALSE(event_value::decode(77, value.substr(0, 25), &why));
    CHECK(why == event_value_error::truncated);
    CHECK_FALSE(event_value::decode(77, "", &why));
    CHECK(why == event_value_error::truncated);
  }
  SECTION("an unknown record version is refused") {
    value[0] = 2;
    CHECK_FALSE(event_value::decode(77, value, &why));
    CHECK(why == event_value_error::unknown_version);
  }
  SECTION("an empty payload is fine") {
    x.payload.clear();
    auto y = event_value::decode(77, event_value::encode(x));
    REQUIRE(y);
    CHECK(*y == x);
  }
}

TEST_CASE("crc32 is the standard CRC-32", "[storage][keys]") {
  CHECK(crc32("123456789") == 0xcbf43926u);
  CHECK(crc32("") == 0u);
  CHECK(crc32("a") == 0xe8b7be43u);
  CHECK(crc32("The quick brown fox jumps over the lazy dog") == 0x414fa339u);
  CHECK(crc32(std::string(32, '\0')) == 0x190a55adu);
  CHECK(crc32(std::string(32, '\xff')) == 0xff6cab0bu);
}

TEST_CASE("crc32 gives the checksums stored before (boost::crc_32_type)", "[storage][keys]") {
  // Every log and snapshot written so far carries boost's CRC-32: the implementation may
  // change, the values may not. Lengths and offsets cover the word-at-a-time paths and tails.
  std::mt19937 gen{8};
  std::string data(70000, '\0');
  for (auto& c : data)
    c = static_cast<char>(gen());
  for (std::size_t offset : {0u, 1u, 3u, 7u}) {
    for (std::size_t len : {0u,  1u,  2u,  3u,  4u,  5u,   7u,    8u,    15u,   16u,
                            17u, 31u, 63u, 64u, 65u, 255u, 1000u, 4095u, 4096u, 65537u}) {
      std::string_view piece{data.data() + offset, len};
      boost::crc_32_type reference;
      reference.process_bytes(piece.data(), piece.size());
      CHECK(crc32(piece) == reference.checksum());
    }
  }
}

TEST_CASE("crc32_update continues a checksum over pieces", "[storage][keys]") {
  std::string data = "one snapshot blob, read chunk by chunk from the store";
  for (std::size_t cut = 0; cut <= data.size(); ++cut) {
    std::string_view all{data};
    CHECK(crc32_update(crc32(all.substr(0, cut)), all.substr(cut)) == crc32(all));
  }
  CHECK(crc32_update(0, data) == crc32(data));
}
