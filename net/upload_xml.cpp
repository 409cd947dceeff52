/// The upload handler's wire format: parse_upload_header() and upload_reply().

#include "net/boinc_xml.hpp"
#include "net/xml_text.hpp"
#include "storage/file_store.hpp"

#include <cmath>

namespace cobble::net {

using namespace xml;

namespace {

/// A non-negative whole byte count, as BOINC writes it with %.0f (".0…" fractions allowed).
bool to_byte_count(std::string_view s, long long& out) {
  s = trim(s);
  if (s.empty())
    return false;
  double v = 0;
  if (!to_double(s, v) || !std::isfinite(v) || v < 0 || v != std::floor(v) || v > 9.0e15)
    return false;
  out = static_cast<long long>(v);
  return true;
}

/// `text` for an error message: its first 40 bytes (cut on a UTF-8 boundary), invalid UTF-8
/// replaced, in quotes.
std::string quoted(std::string text) {
  cap_utf8(text, 40);
  return "'" + valid_utf8(text) + "'";
}

} // namespace

parse_result<upload_header> parse_upload_header(std::string_view body) {
  using result = parse_result<upload_header>;
  if (trim(body).empty())
    return result::failure("empty upload request");

  constexpr std::size_t max_header = std::size_t{64} * 1024;
  std::optional<std::string> get_file_size, name, md5;
  std::optional<std::string> nbytes_text, max_nbytes_text, offset_text;
  std::optional<std::size_t> data_offset;
  bool in_file_info = false;
  bool in_signature = false;
  std::string signature;

  std::size_t pos = 0;
  while (pos < body.size() && pos < max_header) {
    std::size_t nl = body.find('\n', pos);
    std::size_t line_end = nl == std::string_view::npos ? body.size() : nl;
    std::size_t next = nl == std::string_view::npos ? body.size() : nl + 1;
    std::string_view line = trim(body.substr(pos, line_end - pos));
    pos = next;

    if (line == "<data>") {
      data_offset = next;
      break;
    }
    if (in_signature) {
      auto end = line.find("</xml_signature>");
      signature += std::string{line.substr(0, end)};
      if (end != std::string_view::npos)
        in_signature = false;
      continue;
    }
    if (line.starts_with("<xml_signature>")) {
      auto inner = line.substr(std::string_view{"<xml_signature>"}.size());
      auto end = inner.find("</xml_signature>");
      signature += std::string{inner.substr(0, end)};
      in_signature = end == std::string_view::npos;
      continue;
    }
    if (line == "<file_info>") {
      in_file_info = true;
      continue;
    }
    if (line == "</file_info>") {
      in_file_info = false;
      continue;
    }
    // `<tag>value</tag>` on one line.
    if (line.size() < 3 || line.front() != '<')
      continue;
    auto gt = line.find('>');
    if (gt == std::string_view::npos || gt < 2)
      continue;
    auto tag = line.substr(1, gt - 1);
    auto rest = line.substr(gt + 1);
    if (rest.size() < tag.size() + 3 || !rest.ends_with('>'))
      continue;
    auto closing = rest.substr(rest.size() - tag.size() - 3);
    if (closing.substr(0, 2) != "</" || closing.substr(2, tag.size()) != tag)
      continue;
    std::string value = unescape(trim(rest.substr(0, rest.size() - tag.size() - 3)));

    if (tag == "get_file_size")
      get_file_size = std::move(value);
    else if (tag == "name" && in_file_info)
      name = std::move(value);
    else if (tag == "max_nbytes")
      max_nbytes_text = std::move(value);
    else if (tag == "nbytes" && !in_file_info) // old clients also put nbytes in file_info
      nbytes_text = std::move(value);
    else if (tag == "md5_cksum")
      md5 = std::move(value);
    else if (tag == "offset")
      offset_text = std::move(value);
  }

  upload_header h;
  if (!data_offset) {
    if (!get_file_size)
      return result::failure("upload request has no <data> line and no <get_file_size>");
    if (!storage::safe_file_name(*get_file_size))
      return result::failure(get_file_size->empty() ? "get_file_size request has no file name"
                                                    : "unsafe file name in get_file_size");
    h.kind = upload_header::kind_t::get_file_size;
    h.name = std::move(*get_file_size);
    return result::success(std::move(h));
  }

  h.kind = upload_header::kind_t::file_upload;
  h.data_offset = *data_offset;
  if (!name || name->empty())
    return result::failure("upload request has no file name");
  if (!storage::safe_file_name(*name))
    return result::failure("unsafe file name in upload request");
  h.name = std::move(*name);
  if (!nbytes_text)
    return result::failure("upload request has no <nbytes>");
  if (!to_byte_count(*nbytes_text, h.nbytes))
    return result::failure("bad <nbytes> in upload request: " + quoted(*nbytes_text));
  if (max_nbytes_text && !to_byte_count(*max_nbytes_text, h.max_nbytes))
    return result::failure("bad <max_nbytes> in upload request: " + quoted(*max_nbytes_text));
  if (offset_text && !to_byte_count(*offset_text, h.offset))
    return result::failure("bad <offset> in upload request: " + quoted(*offset_text));
  if (h.offset > h.nbytes)
    return result::failure("upload offset " + std::to_string(h.offset) + " is beyond nbytes "
                           + std::to_string(h.nbytes));
  if (md5)
    h.md5_cksum = std::move(*md5);
  h.xml_signature = unescape(trim(signature));
  return result::success(std::move(h));
}

std::string upload_reply(int status, std::optional<long long> file_size, std::string_view message) {
  std::string out;
  out.reserve(96 + message.size());
  out += "<data_server_reply>\n    <status>";
  append_number(out, status);
  out += "</status>\n";
  if (file_size) {
    out += "    <file_size>";
    append_number(out, *file_size);
    out += "</file_size>\n";
  }
  if (!message.empty()) {
    out += "    <message>";
    append_escaped(out, message);
    out += "</message>\n";
  }
  out += "</data_server_reply>\n";
  return out;
}

} // namespace cobble::net
