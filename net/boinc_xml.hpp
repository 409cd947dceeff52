#pragma once

/// The BOINC wire formats Cobble speaks with a 7.20 client (see
/// ../shared/reference/boinc-protocol.md): the scheduler request and reply, the master page
/// and the file upload handler's request header and reply. Everything here is a pure
/// function of its arguments: no I/O, no logging, no global state, safe from any thread.

#include "actors/rpc.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cobble::net {

/// Either a parsed value or an error text (a C++20 stand-in for std::expected).
///
/// Exactly one of the two is meaningful: when `ok()` the value is in `value`, otherwise
/// `value` is empty and `error` holds one human-readable line suitable for a log or for a
/// `<message>` back to the client.
template <class T>
struct parse_result {
  std::optional<T> value; ///< Set on success.
  std::string error;      ///< Set on failure.

  /// True when parsing succeeded.
  bool ok() const { return value.has_value(); }
  /// Same as `ok()`.
  explicit operator bool() const { return ok(); }

  /// A success holding `v`.
  static parse_result success(T v) { return parse_result{std::move(v), {}}; }
  /// A failure with message `e`.
  static parse_result failure(std::string e) { return parse_result{std::nullopt, std::move(e)}; }
};

/// Largest `reported_result::stderr_out` kept, in bytes; longer texts keep their first
/// 64 KiB (cut on a UTF-8 character boundary). The client already sends at most about 63 KB.
inline constexpr std::size_t max_stderr_bytes = std::size_t{64} * 1024;

/// Largest text value of a scheduler request kept, in bytes (every text element but
/// `stderr_out`): longer ones are cut on a UTF-8 boundary. BOINC's own database keeps these
/// fields in columns of at most 254 characters (domain_name, p_vendor, p_model, os_name,
/// os_version, names, md5 sums), so no honest client sends more.
inline constexpr std::size_t max_request_text_bytes = 255;

/// Largest `<code_sign_key>` of a scheduler request kept, in bytes: a BOINC public key is
/// about 530 (a size line, 8 lines of hex, a line '.'). Cut beyond (it then matches no key).
inline constexpr std::size_t max_code_sign_key_bytes = 2048;

/// Parses the body of a scheduler RPC POST (`<scheduler_request>`, section 3 of the
/// reference) into a `cobble::sched_request`.
///
/// - Reads the identity and version fields, the CPU work request (`work_req_seconds`,
///   `cpu_req_secs`, `cpu_req_instances`, `estimated_delay`), `platform_name`,
///   `dont_send_work`, `<host_info>` and `<time_stats>` into `host`, the `<coprocs>` blocks
///   (`coproc_cuda`, `coproc_ati`, `coproc_intel_gpu` and generic `<coproc><type>`), every
///   `<result>`, `<app_versions>` and `<other_results>`.
/// - Preferences, net_stats, disk_usage and every unknown element are ignored.
/// - `stderr_out` keeps the element's content as text: child elements verbatim (e.g.
///   `<core_client_version>`), CDATA sections unwrapped (so `<stderr_txt>…</stderr_txt>`
///   appears as text), character data entity-decoded; capped at `max_stderr_bytes`.
/// - `code_sign_key` is cut to `max_code_sign_key_bytes`; every other text value to
///   `max_request_text_bytes` (on a UTF-8 boundary).
///   Invalid UTF-8 anywhere is replaced by U+FFFD, so it reaches neither the log nor a view.
/// - Numbers use strtod/strtol syntax (locale-independent), surrounding whitespace allowed,
///   an empty element counts as 0 (as in BOINC's own parser). NaN and infinities are
///   refused. So are values out of range in the host's description and the AutoFlops
///   figures: negative counts, speeds, sizes, app units and raw_flops_per_au, and
///   `<time_stats>` fractions outside [-1, 1] (a client sends -1 for
///   "not known yet"). Reported times parse as given (a negative one
///   is flagged by the scheduler, not refused: a client resends its reports until they are
///   acknowledged). Integers must fit their field (e.g. `hostid` must be a non-negative
///   64-bit value).
/// - A boolean is true for `<x/>` or any non-zero number, false for `<x>0</x>`.
///
/// Errors: empty body, malformed or truncated XML (pugixml's description and byte offset),
/// a root other than `scheduler_request`, a missing or empty `authenticator`, and any number
/// that does not parse or is out of range (the message names the element).
parse_result<sched_request> parse_sched_request(std::string_view body);

/// Where the URLs in a scheduler reply point.
struct reply_urls {
  std::string base_url; ///< Scheme, host and port, no trailing slash, e.g. http://127.0.0.1:8080
  std::string project;  ///< Project path segment, e.g. "cobble".
};

/// The download URL of input file `name`: base_url + "/" + project + "/download/" + name.
/// Characters outside [A-Za-z0-9._~-] in `name` are percent-encoded (names that follow the
/// BOINC rules contain none, so the URL is then the plain concatenation).
std::string download_url(const reply_urls& urls, std::string_view name);

/// The upload URL shared by every output: base_url + "/" + project + "/upload".
std::string upload_url(const reply_urls& urls);

/// Writes `reply` as a `<scheduler_reply>` document (section 4 of the reference).
///
/// - Always: scheduler_version 720, project_name (when non-empty), request_delay.
/// - hostid only when set; next_rpc_delay only when set; messages as
///   `<message priority="notice">` or `priority="low"`.
/// - Booleans appear as `<x/>` only when true (project_is_down, dont_use_dcf, copy_file,
///   optional, report_immediately).
/// - Files: inputs get download_url, nbytes (when > 0) and md5_cksum (when set); outputs get
///   upload_url and max_nbytes, never nbytes.
/// - Results: platform and version_num only when the platform is non-empty and not
///   "anonymous" (the client then picks its own highest version); plan_class only when
///   non-empty.
/// - Numbers use the shortest text that round-trips a double; non-finite values, which
///   BOINC cannot use, are written as 0. Text is XML-escaped; control characters other than
///   tab and newline are dropped (the client reads C strings).
std::string write_sched_reply(const sched_reply& reply, const reply_urls& urls);

/// The client side (cobble-sim --server): writes `req` as a `<scheduler_request>` that
/// parse_sched_request() reads back to the same fields (the CPU request as cpu_req_secs /
/// cpu_req_instances / estimated_delay, each coprocessor as `<coproc_cuda>`, `<coproc_ati>`
/// or `<coproc_intel_gpu>` inside `<coprocs>`, reported results with their `<file_info>`).
std::string write_sched_request(const sched_request& req);

/// The client side: reads a `<scheduler_reply>` (what write_sched_reply() writes, or any
/// BOINC server's reply) into a sched_reply: hostid, delays, messages, file infos (an
/// `<upload_url>` marks an output), workunits with their file refs, results with their
/// outputs, acks and aborts. URLs are not kept. Unknown elements are ignored; malformed XML,
/// another root element or a bad number is an error.
parse_result<sched_reply> parse_sched_reply(std::string_view body);

/// What makes the project's home page a BOINC master file: the scheduler URL as a column-0
/// `<link rel="boinc_scheduler" href="URL">` line for the page's head and a column-0
/// `<scheduler>URL</scheduler>` line inside an HTML comment (the client reads the page as
/// text, 255-character lines, and finds both; a browser shows neither).
/// @throws std::invalid_argument when `scheduler_url` is empty, longer than 200 characters,
///         or contains whitespace, quotes, '<', '>' or '&'.
std::string scheduler_lines(std::string_view scheduler_url);

/// A parsed upload-handler request header (section 6 of the reference).
struct upload_header {
  /// Which of the two requests this is.
  enum class kind_t { get_file_size, file_upload };
  kind_t kind = kind_t::file_upload;
  std::string name;            ///< The file: `<get_file_size>` text or `<file_info><name>`.
  long long max_nbytes = 0;    ///< file_upload: `<file_info><max_nbytes>`, 0 if absent.
  long long nbytes = 0;        ///< file_upload: total file size.
  std::string md5_cksum;       ///< file_upload: MD5 of the whole file (empty if absent).
  long long offset = 0;        ///< file_upload: where the data starts in the file (0 if absent).
  std::size_t data_offset = 0; ///< file_upload: index in the body of the first raw byte.
  std::string xml_signature; ///< file_upload: the `<xml_signature>` text the server gave, trimmed.
};

/// Parses an upload POST body line by line, never feeding the raw data to an XML parser.
///
/// A body containing `<get_file_size>NAME</get_file_size>` (before any `<data>` line) is a
/// size query. Otherwise the header must have a line that is exactly `<data>` (surrounding
/// blanks and a trailing CR allowed); the raw bytes start right after its '\n' (or at the end
/// of a body whose last line it is) and `data_offset` points there. The bytes after it are not
/// inspected; the caller checks that `body.size() - data_offset == nbytes - offset`.
///
/// Errors: empty body; no `<data>` line (within the first 64 KiB) and no get_file_size; a
/// missing or unsafe name (empty, '/', '\\', "..", control characters); a missing `nbytes`;
/// numbers that are not non-negative integers (BOINC writes them with %.0f; a ".0"
/// fraction is accepted); an offset larger than nbytes. A bad number is quoted in the message
/// (its first 40 bytes, invalid UTF-8 replaced).
parse_result<upload_header> parse_upload_header(std::string_view body);

/// The upload handler's reply: `<data_server_reply><status>S</status>[<file_size>N</file_size>]
/// [<message>M</message>]</data_server_reply>`. `status` is 0 (done), 1 (transient error,
/// retry) or -1 (permanent error). A size query answered with status 0 must carry
/// `file_size`, or the client asks again forever. An empty message is left out.
std::string upload_reply(int status, std::optional<long long> file_size, std::string_view message);

} // namespace cobble::net
