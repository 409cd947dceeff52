#include "actors/event_codec.hpp"

#include "actors/routing.hpp"
#include "storage/codec.hpp"

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace cobble {

namespace {

// Decodes the alternative whose kind matches, by walking the variant's alternatives.
template <std::size_t I = 0>
bool decode_payload(std::uint16_t kind, storage::decoder& dec, payload& out) {
  if constexpr (I < std::variant_size_v<payload>) {
    using T = std::variant_alternative_t<I, payload>;
    if (T::kind == kind) {
      if (dec.version == 0 || dec.version > payload_version_of<T>())
        return false;
      T x{};
      dec.get(x);
      out = std::move(x);
      return true;
    }
    return decode_payload<I + 1>(kind, dec, out);
  } else {
    return false;
  }
}

} // namespace

storage::event_record to_record(const event& e) {
  storage::event_record r;
  r.seq = e.seq;
  r.time_us = e.time;
  r.kind = kind_of(e.data);
  auto [k, id] = entity_of(e.data);
  r.entity_kind = static_cast<std::uint8_t>(k);
  r.entity_id = id;
  r.project = e.project;
  storage::writer w{r.payload};
  std::visit(
    [&](const auto& x) {
      auto version = payload_version_of<std::decay_t<decltype(x)>>();
      w.put_u8(version);
      storage::encoder enc{w, version};
      enc.put(x);
    },
    e.data);
  return r;
}

std::optional<event> from_record(const storage::event_record& r) {
  storage::reader rd{r.payload};
  auto version = rd.get_u8();
  if (rd.failed() || version == 0)
    return std::nullopt;
  event e;
  e.seq = r.seq;
  e.time = r.time_us;
  e.project = r.project;
  storage::decoder dec{rd};
  dec.version = version;
  if (!decode_payload(r.kind, dec, e.data) || rd.failed() || !rd.at_end())
    return std::nullopt;
  return e;
}

} // namespace cobble
