#include "storage/keys.hpp"

#include "storage/codec.hpp"

#include <isa-l/crc.h>

namespace cobble::storage {

namespace {

/// True when `key` has exactly `size` bytes and starts with `prefix`.
bool check_key(std::string_view key, std::size_t size, key_prefix prefix) {
  return key.size() == size
         && static_cast<std::uint8_t>(key[0]) == static_cast<std::uint8_t>(prefix);
}

std::string with_prefix(key_prefix prefix, std::size_t size) {
  std::string out;
  out.reserve(size);
  out.push_back(static_cast<char>(prefix));
  return out;
}

} // namespace

std::uint32_t crc32(std::string_view bytes) {
  return crc32_update(0, bytes);
}

std::uint32_t crc32_update(std::uint32_t crc, std::string_view bytes) {
  // ISA-L's gzip CRC is the same IEEE 802.3 CRC-32 as zlib's crc32 and boost::crc_32_type,
  // which wrote the stored checksums before (same value, same way of continuing), folded with
  // carry-less multiplies: about 9 GB/s on a 150-byte event where zlib managed 0.9 (13 % of
  // a replay's samples). The length is 64-bit, so a snapshot over 4 GB is fine.
  return ::crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(bytes.data()),
                           static_cast<std::uint64_t>(bytes.size()));
}

// -- keys ---------------------------------------------------------------------

std::string format_version_key::encode() {
  return with_prefix(key_prefix::format_version, size);
}

bool format_version_key::matches(std::string_view key) {
  return check_key(key, size, key_prefix::format_version);
}

std::string event_key::encode() const {
  auto out = with_prefix(key_prefix::event, size);
  writer{out}.put_u64(seq);
  return out;
}

std::optional<event_key> event_key::decode(std::string_view key) {
  if (!check_key(key, size, key_prefix::event))
    return std::nullopt;
  reader r{key.substr(1)};
  return event_key{r.get_u64()};
}

std::string snapshot_chunk_key::encode() const {
  auto out = seq_prefix(seq);
  writer{out}.put_u32(chunk);
  return out;
}

std::string snapshot_chunk_key::seq_prefix(std::uint64_t seq) {
  auto out = with_prefix(key_prefix::snapshot_chunk, size);
  writer{out}.put_u64(seq);
  return out;
}

std::string snapshot_chunk_key::upper_bound() {
  return std::string(1,
                     static_cast<char>(static_cast<std::uint8_t>(key_prefix::snapshot_chunk) + 1));
}

std::optional<snapshot_chunk_key> snapshot_chunk_key::decode(std::string_view key) {
  if (!check_key(key, size, key_prefix::snapshot_chunk))
    return std::nullopt;
  reader r{key.substr(1)};
  snapshot_chunk_key result;
  result.seq = r.get_u64();
  result.chunk = r.get_u32();
  return result;
}

std::string snapshot_manifest_key::encode() const {
  auto out = with_prefix(key_prefix::snapshot_manifest, size);
  writer{out}.put_u64(seq);
  return out;
}

std::optional<snapshot_manifest_key> snapshot_manifest_key::decode(std::string_view key) {
  if (!check_key(key, size, key_prefix::snapshot_manifest))
    return std::nullopt;
  reader r{key.substr(1)};
  return snapshot_manifest_key{r.get_u64()};
}

// -- values -------------------------------------------------------------------

std::string format_version_value::encode(std::uint32_t version) {
  std::string out;
  writer{out}.put_u32(version);
  return out;
}

std::optional<std::uint32_t> format_version_value::decode(std::string_view value) {
  if (value.size() != size)
    return std::nullopt;
  reader r{value};
  return r.get_u32();
}

std::string snapshot_manifest::encode() const {
  std::string out;
  writer w{out};
  if (storage == snapshot_storage::file) {
    out.reserve(file_size);
    w.put_u8(file_version);
    w.put_u64(bytes);
    w.put_u32(crc);
    w.put_u64(generation);
    return out;
  }
  out.reserve(size);
  w.put_u8(version);
  w.put_u32(chunks);
  w.put_u64(bytes);
  w.put_u32(crc);
  return out;
}

std::optional<snapshot_manifest> snapshot_manifest::decode(std::string_view value) {
  if (value.empty())
    return std::nullopt;
  reader r{value};
  auto v = r.get_u8();
  snapshot_manifest result;
  if (v == version && value.size() == size) {
    result.chunks = r.get_u32();
    result.bytes = r.get_u64();
    result.crc = r.get_u32();
    return result;
  }
  if (v == file_version && value.size() == file_size) {
    result.storage = snapshot_storage::file;
    result.bytes = r.get_u64();
    result.crc = r.get_u32();
    result.generation = r.get_u64();
    return result;
  }
  return std::nullopt;
}

// -- snapshot files -----------------------------------------------------------

std::string snapshot_file_name(std::uint64_t seq, std::uint64_t generation) {
  auto digits = std::to_string(seq);
  std::string out(snapshot_file_seq_digits - digits.size(), '0');
  out += digits;
  out += '-';
  out += std::to_string(generation);
  out += snapshot_file_suffix;
  return out;
}

namespace {

/// The value of `digits` (nonempty, ASCII digits only, no overflow), else nullopt.
std::optional<std::uint64_t> parse_decimal(std::string_view digits) {
  if (digits.empty() || digits.size() > 20)
    return std::nullopt;
  std::uint64_t x = 0;
  for (char c : digits) {
    if (c < '0' || c > '9')
      return std::nullopt;
    auto d = static_cast<std::uint64_t>(c - '0');
    if (x > (UINT64_MAX - d) / 10)
      return std::nullopt;
    x = x * 10 + d;
  }
  return x;
}

} // namespace

std::optional<snapshot_file_id> parse_snapshot_file_name(std::string_view name) {
  std::string_view suffix{snapshot_file_suffix};
  if (name.size() <= snapshot_file_seq_digits + 1 + suffix.size()
      || name.substr(name.size() - suffix.size()) != suffix
      || name[snapshot_file_seq_digits] != '-')
    return std::nullopt;
  auto seq = parse_decimal(name.substr(0, snapshot_file_seq_digits));
  auto gen = parse_decimal(name.substr(snapshot_file_seq_digits + 1,
                                       name.size() - suffix.size() - snapshot_file_seq_digits - 1));
  if (!seq || !gen)
    return std::nullopt;
  // Exactly the name snapshot_file_name() gives: no leading zeros in the generation.
  if (snapshot_file_name(*seq, *gen) != name)
    return std::nullopt;
  return snapshot_file_id{*seq, *gen};
}

const char* to_string(event_value_error x) {
  switch (x) {
    case event_value_error::none:
      return "no error";
    case event_value_error::truncated:
      return "truncated record";
    case event_value_error::unknown_version:
      return "unknown record format version";
    case event_value_error::checksum_mismatch:
      return "checksum mismatch";
  }
  return "unknown event value error";
}

std::string event_value::encode(const event_record& x) {
  std::string out;
  out.reserve(header_size + x.payload.size());
  writer w{out};
  w.put_u8(version);
  w.put_u64(static_cast<std::uint64_t>(x.time_us));
  w.put_u16(x.kind);
  w.put_u8(x.entity_kind);
  w.put_u16(x.project);
  w.put_u64(x.entity_id);
  w.put_u32(crc32(x.payload));
  w.put_raw(x.payload);
  return out;
}

std::optional<event_record>
event_value::decode(std::uint64_t seq, std::string_view value, event_value_error* why) {
  event_record x;
  auto e = decode_into(seq, value, x);
  if (why)
    *why = e;
  if (e != event_value_error::none)
    return std::nullopt;
  return x;
}

event_value_error
event_value::decode_into(std::uint64_t seq, std::string_view value, event_record& x) {
  if (value.size() < header_size)
    return event_value_error::truncated;
  reader r{value};
  if (r.get_u8() != version)
    return event_value_error::unknown_version;
  x.seq = seq;
  x.time_us = static_cast<std::int64_t>(r.get_u64());
  x.kind = r.get_u16();
  x.entity_kind = r.get_u8();
  x.project = r.get_u16();
  x.entity_id = r.get_u64();
  auto crc = r.get_u32();
  auto payload = r.get_raw(r.remaining());
  if (r.failed())
    return event_value_error::truncated;
  if (crc32(payload) != crc)
    return event_value_error::checksum_mismatch;
  x.payload.assign(payload.data(), payload.size());
  return event_value_error::none;
}

} // namespace cobble::storage
