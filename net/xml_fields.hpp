#pragma once

/// Field tables: one table per BOINC struct, listing its elements in the order they are
/// written. Each entry names the tag, the member (a path of member pointers, outermost first),
/// its kind (by the factory that made it) and when it is written; the parser and the writer
/// both walk the same table, so the two cannot drift apart. Internal to net/.
///
///     constexpr field<file_ref> file_ref_fields[] = {
///       value<&file_ref::file_name>("file_name"),
///       value<&file_ref::open_name>("open_name", when::nonempty),
///       value<&file_ref::copy_file>("copy_file"),
///     };
///
/// Reading: each child element goes to the entry of its tag (the last occurrence wins);
/// unknown elements are ignored; the first value that does not parse stops the read (see
/// `reader`). Writing: the entries in table order, each through `writer`.

#include "net/boinc_xml.hpp"
#include "net/xml_text.hpp"

#include <pugixml.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace cobble::net::xml {

/// When an entry is written (it is read whenever its element is there).
enum class when : std::uint8_t {
  always,
  nonempty, ///< Text: when not empty.
  positive, ///< Number: when > 0 (NaN is not; infinity is, and is written as 0).
  bound,    ///< Number: when finite and > 0; otherwise the client's default applies.
  nonzero,  ///< Number: when not 0.
  nonneg,   ///< Number: when >= 0 (an index that is -1 for none).
};

/// Where tables write to: the document, and what the file URL entries need.
struct sink {
  writer x;
  const reply_urls* urls = nullptr; ///< Scheduler replies only: where file URLs point.
  std::string upload_url;           ///< Scheduler replies only: upload_url(*urls).
};

/// One entry of a struct's table. Made by the factories below, never by hand.
template <class S>
struct field {
  std::string_view tag;   ///< The element, among the struct's other elements.
  std::string_view inner; ///< Lists: the tag nested in `tag` (see items(), texts_in()).
  when cond = when::always;
  bool (*only_if)(const S&) = nullptr; ///< When set: written only if this holds of the struct.
  /// Reads element `n` into the struct; null: the element is ignored.
  using read_fn = void (*)(reader&, const field&, const pugi::xml_node& n, S&);
  read_fn read = nullptr;
  /// Writes the entry; null: never written.
  using write_fn = void (*)(sink&, const field&, const S&);
  write_fn write = nullptr;
  /// Before a struct is read: a BOINC boolean is false unless its element is there.
  void (*clear)(S&) = nullptr;
};

// -- walking a table ---------------------------------------------------------------------

/// Gives every boolean of `s` that `t` lists its absent value, false (before reading `s`).
template <class S, std::size_t N>
void clear_flags(S& s, const field<S> (&t)[N]) {
  for (const auto& f : t)
    if (f.clear)
      f.clear(s);
}

/// Reads element `n` by the entry of its tag; an element `t` has no entry for is ignored.
template <class S, std::size_t N>
void read_field(reader& r, const pugi::xml_node& n, S& s, const field<S> (&t)[N]) {
  std::string_view name = n.name();
  for (const auto& f : t)
    if (f.read && f.tag == name) {
      f.read(r, f, n, s);
      return;
    }
}

/// Reads the children of `node` into `s` until the first error, passing each child to `also`
/// afterwards (for what is no member of `s`).
template <class S, std::size_t N, class Also>
void read_fields(reader& r, const pugi::xml_node& node, S& s, const field<S> (&t)[N], Also also) {
  for (auto n = node.first_child(); n && !r.failed(); n = n.next_sibling()) {
    read_field(r, n, s, t);
    also(n);
  }
}

template <class S, std::size_t N>
void read_fields(reader& r, const pugi::xml_node& node, S& s, const field<S> (&t)[N]) {
  read_fields(r, node, s, t, [](const pugi::xml_node&) {});
}

/// Writes the entries of `t` for `s`, in table order.
template <class S, std::size_t N>
void write_fields(sink& o, const S& s, const field<S> (&t)[N]) {
  for (const auto& f : t)
    if (f.write && (!f.only_if || f.only_if(s)))
      f.write(o, f, s);
}

// -- values by type ----------------------------------------------------------------------

namespace detail {

template <class M>
struct member_of;
template <class C, class T>
struct member_of<T C::*> {
  using owner = C;
};

template <auto M, auto...>
struct first_owner {
  using type = typename member_of<decltype(M)>::owner;
};

/// The struct a member path starts from.
template <auto... Path>
using owner_t = typename first_owner<Path...>::type;

/// The member at the end of a path of member pointers: `s.*A.*B...`.
template <auto... Path, class S>
auto& at(S& s) {
  return (s.*....*Path);
}

template <class T>
inline constexpr bool is_number = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

inline void get(reader& r, const pugi::xml_node& n, std::string& v) {
  r.str(n, v);
}
inline void get(reader& r, const pugi::xml_node& n, bool& v) {
  r.boolean(n, v);
}
inline void get(reader& r, const pugi::xml_node& n, double& v) {
  r.num(n, v);
}
template <class I, std::enable_if_t<is_number<I> && std::is_integral_v<I>, int> = 0>
void get(reader& r, const pugi::xml_node& n, I& v) {
  r.integer(n, v);
}
template <class T>
void get(reader& r, const pugi::xml_node& n, std::optional<T>& v) {
  T t{};
  get(r, n, t);
  v = t;
}

inline void put(writer& x, std::string_view tag, const std::string& v) {
  x.text(tag, v);
}
/// `<tag/>` when true, nothing when false.
inline void put(writer& x, std::string_view tag, bool v) {
  x.flag(tag, v);
}
template <class N, std::enable_if_t<is_number<N>, int> = 0>
void put(writer& x, std::string_view tag, N v) {
  x.number(tag, v);
}
/// Nothing when unset.
template <class T>
void put(writer& x, std::string_view tag, const std::optional<T>& v) {
  if (v)
    put(x, tag, *v);
}

inline bool wanted(when w, const std::string& v) {
  return w != when::nonempty || !v.empty();
}
inline bool wanted(when, bool) {
  return true; // put() leaves false out
}
template <class T>
bool wanted(when, const std::optional<T>&) {
  return true; // put() leaves an unset value out
}
template <class N, std::enable_if_t<is_number<N>, int> = 0>
bool wanted(when w, N v) {
  switch (w) {
    case when::positive:
      return v > 0;
    case when::bound:
      return std::isfinite(static_cast<double>(v)) && v > 0;
    case when::nonzero:
      return v != 0;
    case when::nonneg:
      if constexpr (std::is_unsigned_v<N>)
        return true;
      else
        return v >= 0;
    default:
      return true;
  }
}

template <class S, auto... Path>
void read_value(reader& r, const field<S>&, const pugi::xml_node& n, S& s) {
  get(r, n, at<Path...>(s));
}

template <class S, auto... Path>
void write_value(sink& o, const field<S>& f, const S& s) {
  const auto& v = at<Path...>(s);
  if (wanted(f.cond, v))
    put(o.x, f.tag, v);
}

template <class S, auto... Path>
void clear_value(S& s) {
  at<Path...>(s) = false;
}

template <class S, auto M>
void read_present(reader&, const field<S>&, const pugi::xml_node&, S& s) {
  s.*M = true;
}

template <class S, auto M, std::size_t Max>
void read_markup(reader&, const field<S>&, const pugi::xml_node& n, S& s) {
  s.*M = markup_text(n, Max);
}

template <class S, auto M, std::size_t Max>
void read_long_text(reader& r, const field<S>&, const pugi::xml_node& n, S& s) {
  auto cap = r.max_text;
  r.max_text = Max;
  r.str(n, s.*M);
  r.max_text = cap;
}

template <class S, auto M>
void write_block(sink& o, const field<S>& f, const S& s) {
  if (wanted(f.cond, s.*M))
    o.x.block(f.tag, s.*M);
}

template <class S, auto M, const auto& Sub>
void read_group(reader& r, const field<S>&, const pugi::xml_node& n, S& s) {
  read_fields(r, n, s.*M, Sub);
}

template <class S, auto M, const auto& Sub>
void write_group(sink& o, const field<S>& f, const S& s) {
  o.x.open(f.tag);
  write_fields(o, s.*M, Sub);
  o.x.close(f.tag);
}

/// Calls `each` for every child of `n` named `name`, until the first error.
template <class F>
void each_child(reader& r, const pugi::xml_node& n, std::string_view name, F each) {
  for (auto c = n.first_child(); c && !r.failed(); c = c.next_sibling())
    if (c.name() == name)
      each(c);
}

template <class S, auto M, const auto& Sub>
void read_items(reader& r, const field<S>& f, const pugi::xml_node& n, S& s) {
  auto add = [&](const pugi::xml_node& c) {
    auto& item = (s.*M).emplace_back();
    clear_flags(item, Sub);
    read_fields(r, c, item, Sub);
  };
  if (f.inner.empty())
    add(n);
  else
    each_child(r, n, f.inner, add);
}

template <class S, auto M, const auto& Sub>
void write_items(sink& o, const field<S>& f, const S& s) {
  const auto& items = s.*M;
  std::string_view tag = f.inner.empty() ? f.tag : f.inner;
  if (!f.inner.empty()) {
    if (items.empty())
      return;
    o.x.open(f.tag);
  }
  for (const auto& item : items) {
    o.x.open(tag);
    write_fields(o, item, Sub);
    o.x.close(tag);
  }
  if (!f.inner.empty())
    o.x.close(f.tag);
}

template <class S, auto M>
void read_texts(reader& r, const field<S>& f, const pugi::xml_node& n, S& s) {
  auto add = [&](const pugi::xml_node& c) { r.str(c, (s.*M).emplace_back()); };
  if (f.inner.empty())
    add(n);
  else
    each_child(r, n, f.inner, add);
}

template <class S, auto M>
void write_texts(sink& o, const field<S>& f, const S& s) {
  const auto& texts = s.*M;
  if (f.inner.empty()) {
    for (const auto& t : texts)
      o.x.text(f.tag, t);
  } else if (!texts.empty()) {
    o.x.open(f.tag);
    for (const auto& t : texts)
      o.x.text(f.inner, t);
    o.x.close(f.tag);
  }
}

template <class S, auto M>
void read_texts_in(reader& r, const field<S>& f, const pugi::xml_node& n, S& s) {
  pugi::xml_node child;
  for (auto c = n.first_child(); c && !child; c = c.next_sibling())
    if (c.name() == f.inner)
      child = c;
  r.str(child, (s.*M).emplace_back()); // no such child: empty text
}

template <class S, auto M>
void write_texts_in(sink& o, const field<S>& f, const S& s) {
  for (const auto& t : s.*M) {
    o.x.open(f.tag);
    o.x.text(f.inner, t);
    o.x.close(f.tag);
  }
}

/// An entry with its tag, nested tag, reader and writer.
template <class S>
constexpr field<S> entry(std::string_view tag, std::string_view inner,
                         typename field<S>::read_fn read, typename field<S>::write_fn write) {
  field<S> f;
  f.tag = tag;
  f.inner = inner;
  f.read = read;
  f.write = write;
  return f;
}

} // namespace detail

// -- the kinds of entries ----------------------------------------------------------------

/// A text, number, boolean or optional number at the member path `Path`: text is trimmed
/// when read and escaped when written; numbers as to_double() / to_integer() read them and
/// append_number() writes them; a boolean as reader::boolean() reads it, written `<tag/>`
/// when true only; an optional is written when set.
template <auto... Path>
constexpr field<detail::owner_t<Path...>>
value(std::string_view tag, when w = when::always,
      bool (*only_if)(const detail::owner_t<Path...>&) = nullptr) {
  using S = detail::owner_t<Path...>;
  auto f = detail::entry<S>(tag, {}, &detail::read_value<S, Path...>,
                            &detail::write_value<S, Path...>);
  f.cond = w;
  f.only_if = only_if;
  using T = std::remove_reference_t<decltype(detail::at<Path...>(std::declval<S&>()))>;
  if constexpr (std::is_same_v<T, bool>)
    f.clear = &detail::clear_value<S, Path...>;
  return f;
}

/// A boolean that is true when its element is there, whatever the element holds (as BOINC
/// clients read the reply's flags); written `<tag/>` when true.
template <auto M>
constexpr field<detail::owner_t<M>> present(std::string_view tag) {
  auto f = value<M>(tag);
  f.read = &detail::read_present<detail::owner_t<M>, M>;
  return f;
}

/// Text that may hold markup (`<stderr_out>`): read with markup_text(), at most `Max` bytes.
template <auto M, std::size_t Max>
constexpr field<detail::owner_t<M>> markup(std::string_view tag, when w) {
  auto f = value<M>(tag, w);
  f.read = &detail::read_markup<detail::owner_t<M>, M, Max>;
  return f;
}

/// Text written as a block, the value on lines of its own (writer::block()).
template <auto M>
constexpr field<detail::owner_t<M>>
block(std::string_view tag, when w, bool (*only_if)(const detail::owner_t<M>&) = nullptr) {
  auto f = value<M>(tag, w, only_if);
  f.write = &detail::write_block<detail::owner_t<M>, M>;
  return f;
}

/// A block() whose text may be longer than the reader's max_text, up to `Max` bytes (a
/// code-signing key: about 530).
template <auto M, std::size_t Max>
constexpr field<detail::owner_t<M>> long_block(std::string_view tag, when w) {
  auto f = block<M>(tag, w);
  f.read = &detail::read_long_text<detail::owner_t<M>, M, Max>;
  return f;
}

/// A member struct whose entries (table `Sub`) are the children of `<tag>`; always written.
template <auto M, const auto& Sub>
constexpr field<detail::owner_t<M>> group(std::string_view tag) {
  using S = detail::owner_t<M>;
  return detail::entry<S>(tag, {}, &detail::read_group<S, M, Sub>, &detail::write_group<S, M, Sub>);
}

/// A vector of structs (table `Sub`): one `<tag>` element per item; or, with `item`, one
/// `<item>` per item inside a `<tag>` that is written only when there are items.
template <auto M, const auto& Sub>
constexpr field<detail::owner_t<M>> items(std::string_view tag, std::string_view item = {}) {
  using S = detail::owner_t<M>;
  return detail::entry<S>(tag, item, &detail::read_items<S, M, Sub>,
                          &detail::write_items<S, M, Sub>);
}

/// A vector of strings, like items(): `<tag>TEXT</tag>` per string, or with `item`,
/// `<item>TEXT</item>` per string inside a `<tag>` written only when there are strings.
template <auto M>
constexpr field<detail::owner_t<M>> texts(std::string_view tag, std::string_view item = {}) {
  using S = detail::owner_t<M>;
  return detail::entry<S>(tag, item, &detail::read_texts<S, M>, &detail::write_texts<S, M>);
}

/// A vector of strings, each as `<tag><inner>TEXT</inner></tag>`; when read, the first
/// `<inner>` counts (and none gives an empty string).
template <auto M>
constexpr field<detail::owner_t<M>> texts_in(std::string_view tag, std::string_view inner) {
  using S = detail::owner_t<M>;
  return detail::entry<S>(tag, inner, &detail::read_texts_in<S, M>, &detail::write_texts_in<S, M>);
}

namespace detail {

/// `<coproc><type>T</type><count>N</count></coproc>` of an app version into the members
/// `Type` and `Count`. An unknown type leaves the version CPU-only: Cobble schedules only the
/// four known resource types.
template <class S, auto Type, auto Count>
void read_coproc_use(reader& r, const field<S>&, const pugi::xml_node& n, S& s) {
  std::optional<resource_type> type;
  double count = 0;
  for (auto m = n.first_child(); m && !r.failed(); m = m.next_sibling()) {
    std::string_view name = m.name();
    if (name == "type")
      type = parse_resource_type(trim(reader::content(m)));
    else if (name == "count")
      r.num(m, count);
  }
  if (type && *type != resource_type::cpu) {
    s.*Type = *type;
    s.*Count = count;
  }
}

template <class S, auto Type, auto Count>
void write_coproc_use(sink& o, const field<S>& f, const S& s) {
  if (s.*Type == resource_type::cpu)
    return;
  o.x.open(f.tag);
  o.x.text("type", to_string(s.*Type));
  o.x.number("count", s.*Count);
  o.x.close(f.tag);
}

} // namespace detail

/// An app version's use of a coprocessor, `<tag><type>T</type><count>N</count></tag>`, in
/// the members `Type` (a resource_type; cpu: none, not written) and `Count`.
template <auto Type, auto Count>
constexpr field<detail::owner_t<Type>> coproc_use(std::string_view tag) {
  using S = detail::owner_t<Type>;
  return detail::entry<S>(tag, {}, &detail::read_coproc_use<S, Type, Count>,
                          &detail::write_coproc_use<S, Type, Count>);
}

/// An element that is no plain member: its own reader (null: ignored) and writer.
template <class S>
constexpr field<S>
custom(std::string_view tag, typename field<S>::read_fn read,
       void (*write)(sink&, const field<S>&, const S&), bool (*only_if)(const S&) = nullptr) {
  auto f = detail::entry<S>(tag, {}, read, write);
  f.only_if = only_if;
  return f;
}

} // namespace cobble::net::xml
