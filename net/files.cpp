#include "net/files.hpp"

#include "actors/error.hpp"
#include "net/boinc_xml.hpp"
#include "net/one_shot.hpp"
#include "net/xml_text.hpp"
#include "storage/error.hpp"

#include <caf/all.hpp>

#include <boost/asio/post.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <mutex>

namespace cobble::net {

namespace beast = boost::beast;

namespace {

std::string hmac_hex(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  static constexpr char hex[] = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s.push_back(hex[out[i] >> 4]);
    s.push_back(hex[out[i] & 15]);
  }
  return s;
}

response text_response(unsigned version, bool keep_alive, http::status status, std::string body,
                       std::string_view type) {
  response res{status, version};
  res.set(http::field::server, "cobble");
  res.set(http::field::content_type, type);
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

/// Parses "bytes=N-" or "bytes=N-M"; nullopt for anything else (served as a plain 200).
std::optional<std::pair<std::uint64_t, std::optional<std::uint64_t>>>
parse_range(std::string_view h) {
  if (!h.starts_with("bytes="))
    return std::nullopt;
  h.remove_prefix(6);
  auto dash = h.find('-');
  if (dash == std::string_view::npos || dash == 0 || h.find(',') != std::string_view::npos)
    return std::nullopt;
  // Digits too many for 64 bits name a position past any file: the first byte is then past
  // the end (answered with the whole file), the last byte is the file's last.
  constexpr auto past_any_end = std::numeric_limits<std::uint64_t>::max();
  auto position = [&](std::string_view digits) -> std::optional<std::uint64_t> {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (end != digits.data() + digits.size())
      return std::nullopt;
    if (ec == std::errc::result_out_of_range)
      return past_any_end;
    if (ec != std::errc{})
      return std::nullopt;
    return v;
  };
  auto from = position(h.substr(0, dash));
  if (!from)
    return std::nullopt;
  auto b = h.substr(dash + 1);
  if (b.empty())
    return std::pair{*from, std::optional<std::uint64_t>{}};
  auto to = position(b);
  if (!to || *to < *from)
    return std::nullopt;
  return std::pair{*from, to};
}

/// GET or HEAD of one file of `dir` (named by the target's last segment), as `type`, with
/// ranges; 404 for a name that is not a plain file name or not there.
void serve_file(const std::shared_ptr<file_service>& files, const std::filesystem::path& dir,
                std::string_view type, request&& req, const responder& respond) {
  auto target = std::string_view{req.target()};
  auto q = target.find('?');
  if (q != std::string_view::npos)
    target = target.substr(0, q);
  auto name = std::string{target.substr(target.rfind('/') + 1)};
  unsigned version = req.version();
  bool keep_alive = req.keep_alive();
  bool head = req.method() == http::verb::head;
  auto range = parse_range(req[http::field::range]);
  if (!storage::safe_file_name(name)) {
    respond(
      text_response(version, keep_alive, http::status::not_found, "no such file\n", "text/plain"));
    return;
  }
  files->post(
    [files, dir, type = std::string{type}, name, version, keep_alive, head, range, respond] {
      auto not_found = [&] {
        respond(text_response(version, keep_alive, http::status::not_found,
                              "no such file: " + name + "\n", "text/plain"));
      };
      auto cannot_read = [&](const std::string& why) {
        spdlog::error("download of {}: {}", name, why);
        respond(text_response(version, keep_alive, http::status::internal_server_error,
                              "cannot read the file\n", "text/plain"));
      };
      try {
        // Opened here, on the file pool: the body is read from it as the client takes it, so
        // a download holds one buffer, never the file. A symbolic link is not followed.
        beast::error_code ec;
        auto file = file_window::open_regular(dir / name, ec);
        if (ec) {
          if (ec == std::errc::no_such_file_or_directory)
            not_found();
          else
            cannot_read(ec.message());
          return;
        }
        const auto size = file.file_size();
        // A range starting at or past the end is answered with the whole file, never 416:
        // the BOINC client treats every 4xx on a download as permanent.
        const bool partial = range && range->first < size;
        const auto first = partial ? range->first : 0;
        const auto last = partial
                            ? std::min<std::uint64_t>(range->second.value_or(size - 1), size - 1)
                            : size - 1;
        const auto length = size == 0 ? 0 : last - first + 1;
        const auto status = partial ? http::status::partial_content : http::status::ok;
        auto headers = [&](auto& res) {
          res.set(http::field::server, "cobble");
          res.set(http::field::content_type, type);
          res.keep_alive(keep_alive);
          if (partial)
            res.set(http::field::content_range, "bytes " + std::to_string(first) + "-"
                                                  + std::to_string(last) + "/"
                                                  + std::to_string(size));
          else
            res.set(http::field::accept_ranges, "bytes");
        };
        if (head) {
          response res{status, version};
          headers(res);
          res.content_length(length);
          respond(std::move(res));
          return;
        }
        file.restrict(first, length, ec);
        if (ec) {
          cannot_read(ec.message());
          return;
        }
        file_response res{status, version};
        headers(res);
        res.body().reset(std::move(file), ec);
        if (ec) {
          cannot_read(ec.message());
          return;
        }
        res.prepare_payload();
        respond(std::move(res));
      } catch (const std::exception& e) {
        cannot_read(e.what());
      }
    });
}

/// The type a statistics file is served as.
std::string_view stats_type(std::string_view name) {
  if (name.ends_with(".gz"))
    return "application/gzip";
  if (name.ends_with(".xml"))
    return "application/xml";
  return "application/octet-stream";
}

/// `/<p>/stats/`: the files of the project's statistics export, with their sizes and times, as
/// a page stats sites' operators and volunteers can read (and follow).
void serve_stats_index(const std::shared_ptr<file_service>& files, const std::string& project,
                       const std::filesystem::path& dir, request&& req, const responder& respond) {
  unsigned version = req.version();
  bool keep_alive = req.keep_alive();
  files->post([files, project, dir, version, keep_alive, respond] {
    struct entry {
      std::string name;
      std::uintmax_t size;
      std::string time;
    };
    try {
      std::vector<entry> entries;
      std::error_code ec;
      for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
        auto name = f.path().filename().string();
        if (!f.is_regular_file(ec) || !storage::safe_file_name(name))
          continue;
        auto written = std::chrono::system_clock::to_time_t(
          std::chrono::file_clock::to_sys(f.last_write_time(ec)));
        entries.push_back(
          {name, f.file_size(ec), fmt::format("{:%Y-%m-%d %H:%M:%S} UTC", fmt::gmtime(written))});
      }
      std::sort(entries.begin(), entries.end(),
                [](const entry& a, const entry& b) { return a.name < b.name; });
      std::string body = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                         "<meta name=\"viewport\" content=\"width=device-width\">"
                         "<title>Statistics export of ";
      xml::append_escaped(body, project);
      body += "</title></head><body><h1>Statistics export of ";
      xml::append_escaped(body, project);
      body += "</h1>\n";
      if (entries.empty()) {
        body += "<p>No export has been written yet.</p>\n";
      } else {
        body += "<p>BOINC's db_dump files, for statistics sites; no e-mail addresses.</p>\n"
                "<table><tr><th>File</th><th>Bytes</th><th>Written</th></tr>\n";
        for (const auto& e : entries) {
          std::string name;
          xml::append_escaped(name, e.name);
          body += fmt::format("<tr><td><a href=\"{0}\">{0}</a></td><td>{1}</td><td>{2}</td></tr>\n",
                              name, e.size, e.time);
        }
        body += "</table>\n";
      }
      body += "</body></html>\n";
      respond(text_response(version, keep_alive, http::status::ok, std::move(body),
                            "text/html; charset=utf-8"));
    } catch (const std::exception& e) {
      spdlog::error("listing {}: {}", dir.string(), e.what());
      respond(text_response(version, keep_alive, http::status::internal_server_error,
                            "cannot list the statistics export\n", "text/plain"));
    }
  });
}

/// One upload, streamed to disk. Its XML header is gathered from the first pieces and judged
/// (format, signature, announced size, the project's limit for the file, the offset) before
/// any data is stored; the data is then written on the file pool as it arrives and hashed as
/// it is written. A cut upload keeps what arrived, flushed, for the client to resume from.
///
/// write(), finish() and cut() come from the connection's strand, in order; the file pool and
/// the actor that asks the project act on `mtx_`-guarded state. The actor waits for the pool
/// to hand it the stored output with a plain send (the pool never spawns or requests: a
/// thread that spawns keeps CAF's logger, and the pool outlives the actor system).
class upload_sink final : public body_sink, public std::enable_shared_from_this<upload_sink> {
public:
  /// Bytes gathered before the header must have ended (parse_upload_header reads 64 KiB).
  static constexpr std::size_t max_header = std::size_t{128} * 1024;

  upload_sink(std::shared_ptr<file_routes_context> ctx, std::string project, project_actor actor,
              unsigned version, bool keep_alive, responder respond)
    : ctx_(std::move(ctx)), project_(std::move(project)), actor_(std::move(actor)),
      version_(version), keep_alive_(keep_alive), respond_(std::move(respond)) {}

  void write(std::string piece, std::function<void()> more) override {
    if (!header_) {
      head_ += piece;
      if (!header_complete())
        return more();
      begin(std::move(more), false);
      return;
    }
    received_ += piece.size();
    if (received_ > announced()) {
      too_much();
      return;
    }
    ctx_->files->post(
      [self = shared_from_this(), piece = std::move(piece), more = std::move(more)] {
        std::lock_guard lock{self->mtx_};
        if (!self->writer_)
          return; // cut meanwhile
        if (auto err = self->writer_->append(piece)) {
          self->cannot_store(describe(err));
          return;
        }
        more();
      });
  }

  void finish() override {
    if (!header_) {
      begin({}, true);
      return;
    }
    ctx_->files->post([self = shared_from_this()] {
      std::lock_guard lock{self->mtx_};
      if (self->writer_)
        self->complete();
    });
  }

  void cut() override {
    ctx_->files->post([self = shared_from_this()] {
      std::lock_guard lock{self->mtx_};
      self->cut_ = true;
      self->keep_what_arrived();
    });
  }

private:
  void answer(int status, std::optional<long long> size, std::string_view message) const {
    respond_(text_response(version_, keep_alive_, http::status::ok,
                           upload_reply(status, size, message), "text/xml"));
  }

  /// The header's `<data>` line is in, or more came than any header may hold (judged then).
  bool header_complete() const {
    if (head_.size() > max_header)
      return true;
    for (std::size_t at = head_.find("<data>"); at != std::string::npos;
         at = head_.find("<data>", at + 1)) {
      auto begin = head_.find_last_not_of(" \t", at == 0 ? 0 : at - 1);
      bool starts_line = at == 0 || begin == std::string::npos || head_[begin] == '\n'
                         || (begin == at - 1 && head_[begin] == '\n');
      auto end = head_.find_first_not_of(" \t\r", at + 6);
      if (starts_line && end != std::string::npos && head_[end] == '\n')
        return true;
    }
    return false;
  }

  /// Bytes this request may carry: what the header announces past its offset.
  std::uint64_t announced() const {
    return static_cast<std::uint64_t>(header_->nbytes - header_->offset);
  }

  /// Judges the header (with the body's end, `ended`, or with more to come) and, for an
  /// upload it authorizes, asks the project for the file's limit and opens the file.
  void begin(std::function<void()> more, bool ended) {
    auto parsed = parse_upload_header(head_);
    if (!parsed) {
      spdlog::info("upload refused: {}", parsed.error);
      answer(-1, std::nullopt, parsed.error);
      return;
    }
    header_ = std::move(*parsed.value);
    if (header_->kind == upload_header::kind_t::get_file_size) {
      if (!ended) { // a size query carries no data
        answer(-1, std::nullopt, "a get_file_size request carries no <data>");
        return;
      }
      ctx_->files->post([self = shared_from_this()] {
        auto stored = self->ctx_->files->store().output_size(self->project_, self->header_->name);
        self->answer(0, static_cast<long long>(stored), {});
      });
      return;
    }
    auto who = ctx_->files->verify(header_->xml_signature, header_->name);
    if (!who) {
      spdlog::info("upload of {} refused: missing or invalid signature", header_->name);
      answer(-1, std::nullopt, "upload not authorized for " + header_->name);
      return;
    }
    host_ = *who;
    if (ctx_->disk && ctx_->disk->low()) {
      spdlog::warn("upload of {} refused: {}", header_->name, ctx_->disk->describe());
      answer(1, std::nullopt, "the project's server is low on disk space; retry later");
      return;
    }
    auto data = head_.substr(header_->data_offset);
    head_.clear();
    head_.shrink_to_fit();
    received_ = data.size();
    if (received_ > announced()) {
      too_much();
      return;
    }
    spawn_one_shot(*ctx_->sys, [self = shared_from_this(), data = std::move(data),
                                more = std::move(more), ended](caf::event_based_actor* actor) {
      {
        std::lock_guard lock{self->mtx_};
        self->recorder_ = caf::actor_cast<caf::actor>(actor);
      }
      const auto& name = self->header_->name;
      actor->request(self->actor_, std::chrono::seconds(30), atom::upload_v, name, self->host_)
        .then(
          [self, actor, data, more, ended](double max_nbytes) {
            actor->become(
              [self, actor](atom::upload, std::uint64_t nbytes, const std::string& md5) {
                self->record(actor, nbytes, md5);
                actor->unbecome();
              },
              [actor](atom::upload) { actor->quit(); });
            self->ctx_->files->post([self, data, more, ended, max_nbytes] {
              std::lock_guard lock{self->mtx_};
              self->open(data, max_nbytes);
              if (!self->writer_)
                return;
              if (ended)
                self->complete();
              else
                more();
            });
          },
          [self](caf::error& err) {
            spdlog::info("upload of {} refused: {}", self->header_->name, describe(err));
            self->answer(-1, std::nullopt, "unknown file " + self->header_->name);
          });
    });
  }

  /// On the pool, under `mtx_`: checks the upload against what is stored and the project's
  /// limit, opens the file at the offset and writes the first data.
  void open(const std::string& data, double max_nbytes) {
    if (cut_) {
      release();
      return;
    }
    const auto& h = *header_;
    try {
      auto& store = ctx_->files->store();
      if (static_cast<double>(h.nbytes) > max_nbytes) {
        refuse(h.name + " is " + std::to_string(h.nbytes) + " bytes, over its limit of "
               + std::to_string(static_cast<long long>(max_nbytes)));
        return;
      }
      auto stored = store.output_size(project_, h.name);
      if (static_cast<std::uint64_t>(h.offset) > stored) {
        refuse("offset " + std::to_string(h.offset) + " is beyond the " + std::to_string(stored)
               + " bytes stored of " + h.name);
        return;
      }
      auto writer = store.open_output(project_, h.name, static_cast<std::uint64_t>(h.offset));
      if (!writer) {
        cannot_store(describe(writer.error()));
        return;
      }
      writer_.emplace(std::move(*writer));
      if (auto err = writer_->append(data))
        cannot_store(describe(err));
    } catch (const std::exception& e) {
      cannot_store(e.what());
    }
  }

  /// On the pool, under `mtx_`, once the body ended: the stored output goes to the actor for
  /// recording when it is whole and its digest is the one the client announced.
  void complete() {
    const auto& h = *header_;
    auto done = writer_->finish();
    writer_.reset();
    if (!done) {
      cannot_store(describe(done.error()));
      return;
    }
    if (done->size < static_cast<std::uint64_t>(h.nbytes)) {
      // What arrived is kept; the client asks for the size and resumes there.
      release();
      answer(1, std::nullopt,
             "upload of " + h.name + " is incomplete (" + std::to_string(done->size) + " of "
               + std::to_string(h.nbytes) + " bytes stored); resume");
      return;
    }
    // The client's md5 only refuses a damaged upload; what counts is the server's.
    if (!h.md5_cksum.empty() && *done->md5 != h.md5_cksum) {
      ctx_->files->store().remove_output(project_, h.name);
      release();
      answer(1, std::nullopt, "checksum of " + h.name + " does not match; upload it again");
      return;
    }
    caf::anon_send(std::exchange(recorder_, caf::actor{}), atom::upload_v, done->size, *done->md5);
  }

  /// On the actor: has the project record the output stored whole (output_received), and
  /// answers the client once that is durable: success only then, an error if it refuses.
  void record(caf::event_based_actor* actor, std::uint64_t nbytes, const std::string& md5) {
    auto self = shared_from_this();
    actor
      ->request(actor_, std::chrono::seconds(30), atom::upload_v, header_->name, host_, nbytes, md5)
      .then([self](bool) { self->answer(0, std::nullopt, {}); },
            [self](caf::error& err) {
              const auto& name = self->header_->name;
              spdlog::info("upload of {} not recorded: {}", name, describe(err));
              self->answer(-1, std::nullopt, "upload of " + name + " refused: " + describe(err));
            });
  }

  /// More data than the header announced: refused, and what was stored before stays.
  void too_much() {
    answer(-1, std::nullopt,
           "upload of " + header_->name + " carries " + std::to_string(received_)
             + " bytes or more, more than the " + std::to_string(announced())
             + " its header announces");
    ctx_->files->post([self = shared_from_this()] {
      std::lock_guard lock{self->mtx_};
      self->keep_what_arrived();
    });
  }

  /// Under `mtx_`: a permanent refusal after the header was authorized.
  void refuse(const std::string& why) {
    release();
    answer(-1, std::nullopt, why);
  }

  /// Under `mtx_`: the disk failed; the client retries later.
  void cannot_store(const std::string& why) {
    spdlog::error("upload of {}: {}", header_->name, why);
    writer_.reset();
    release();
    answer(1, std::nullopt, "the server could not store the file; retry later");
  }

  /// Under `mtx_`: flushes what was written (the client resumes from it) and lets the actor go.
  void keep_what_arrived() {
    if (writer_) {
      if (auto err = writer_->sync())
        spdlog::error("upload of {}: {}", header_->name, describe(err));
      writer_.reset();
    }
    release();
  }

  /// Under `mtx_`: the actor has no output to record.
  void release() {
    if (recorder_)
      caf::anon_send(std::exchange(recorder_, caf::actor{}), atom::upload_v);
  }

  std::shared_ptr<file_routes_context> ctx_;
  std::string project_;
  project_actor actor_;
  unsigned version_;
  bool keep_alive_;
  responder respond_;
  // On the strand (and read-only once the header is judged):
  std::string head_;                    ///< The header, while it is gathered.
  std::optional<upload_header> header_; ///< Once judged.
  std::uint64_t host_ = 0;              ///< The host the upload's signature names.
  std::uint64_t received_ = 0;          ///< Data bytes of this request so far.
  // Guarded by mtx_:
  std::mutex mtx_;
  std::optional<storage::output_writer> writer_; ///< The open output, while data arrives.
  caf::actor recorder_;                          ///< The actor waiting for the stored output.
  bool cut_ = false;                             ///< The connection was cut.
};

} // namespace

file_service::file_service(std::shared_ptr<storage::file_store> files, std::string secret,
                           int threads)
  : files_(std::move(files)), secret_(std::move(secret)),
    pool_(std::make_unique<boost::asio::thread_pool>(std::max(threads, 1))) {}

file_service::~file_service() {
  pool_->join();
}

void file_service::post(std::function<void()> f) {
  boost::asio::post(*pool_, std::move(f));
}

std::string file_service::sign(std::string_view file, std::uint64_t host) const {
  auto h = std::to_string(host);
  return "cobble:" + h + ":" + hmac_hex(secret_, std::string{file} + "|" + h);
}

std::optional<std::uint64_t>
file_service::verify(std::string_view token, std::string_view file) const {
  if (!token.starts_with("cobble:"))
    return std::nullopt;
  token.remove_prefix(7);
  auto colon = token.find(':');
  if (colon == std::string_view::npos)
    return std::nullopt;
  std::uint64_t host = 0;
  auto digits = token.substr(0, colon);
  if (std::from_chars(digits.data(), digits.data() + digits.size(), host).ptr
        != digits.data() + digits.size()
      || host == 0)
    return std::nullopt;
  auto expected = hmac_hex(secret_, std::string{file} + "|" + std::string{digits});
  auto given = token.substr(colon + 1);
  if (given.size() != expected.size()
      || CRYPTO_memcmp(given.data(), expected.data(), given.size()) != 0)
    return std::nullopt;
  return host;
}

std::vector<route> file_routes(file_routes_context ctx) {
  std::vector<route> routes;
  auto shared = std::make_shared<file_routes_context>(std::move(ctx));
  for (const auto& [name, actor] : shared->projects) {
    routes.push_back(route{"/" + name + "/download/",
                           false,
                           {http::verb::get, http::verb::head},
                           0,
                           [shared, name = name](request&& req, const responder& respond) {
                             serve_file(shared->files, shared->files->store().download_dir(name),
                                        "application/octet-stream", std::move(req), respond);
                           },
                           {},
                           {}});
    route upload{
      "/" + name + "/upload", true, {http::verb::post}, shared->upload_limit, {}, {}, {}};
    upload.stream = [shared, name = name, actor = actor](const request& header, responder respond) {
      return std::make_shared<upload_sink>(shared, name, actor, header.version(),
                                           header.keep_alive(), std::move(respond));
    };
    routes.push_back(std::move(upload));
    if (shared->stats_dir.empty())
      continue;
    auto stats = shared->stats_dir / name;
    routes.push_back(
      route{"/" + name + "/stats/",
            false,
            {http::verb::get, http::verb::head},
            0,
            [shared, name = name, stats](request&& req, const responder& respond) {
              auto target = std::string_view{req.target()};
              target = target.substr(0, target.find('?'));
              auto file = target.substr(target.rfind('/') + 1);
              if (file.empty())
                serve_stats_index(shared->files, name, stats, std::move(req), respond);
              else
                serve_file(shared->files, stats, stats_type(file), std::move(req), respond);
            },
            {},
            {}});
    routes.push_back(route{"/" + name + "/stats",
                           true,
                           {http::verb::get, http::verb::head},
                           0,
                           [name = name](request&& req, const responder& respond) {
                             auto res = text_response(req.version(), req.keep_alive(),
                                                      http::status::moved_permanently,
                                                      "see /" + name + "/stats/\n", "text/plain");
                             res.set(http::field::location, "/" + name + "/stats/");
                             respond(std::move(res));
                           },
                           {},
                           {}});
  }
  return routes;
}

void stage_input(const std::shared_ptr<file_service>& files, const std::string& project,
                 request&& req, const responder& respond, const std::string& prefix) {
  unsigned version = req.version();
  bool keep_alive = req.keep_alive();
  auto body = std::make_shared<std::string>(std::move(req.body()));
  files->post([files, project, body, version, keep_alive, respond, prefix] {
    auto cannot_stage = [&](const std::string& why) {
      spdlog::error("staging an input of {}: {}", project, why);
      respond(text_response(version, keep_alive, http::status::internal_server_error,
                            nlohmann::json{{"error", why}}.dump(), "application/json"));
    };
    try {
      auto staged = files->store().stage(project, *body, prefix);
      if (!staged) {
        cannot_stage(describe(staged.error()));
        return;
      }
      nlohmann::json j{{"stored_name", staged->name},
                       {"md5", staged->md5},
                       {"nbytes", staged->nbytes},
                       {"existed", staged->existed}};
      respond(
        text_response(version, keep_alive, http::status::created, j.dump(), "application/json"));
    } catch (const std::exception& e) {
      cannot_stage(e.what());
    }
  });
}

} // namespace cobble::net
