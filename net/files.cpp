#include "net/files.hpp"

#include "actors/error.hpp"
#include "net/boinc_xml.hpp"
#include "net/one_shot.hpp"
#include "storage/error.hpp"

#include <caf/all.hpp>
#include <caf/detail/scope_guard.hpp>

#include <boost/asio/post.hpp>

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <limits>

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

void serve_download(const std::shared_ptr<file_service>& files, const std::string& project,
                    request&& req, const responder& respond) {
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
  files->post([files, project, name, version, keep_alive, head, range, respond] {
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
      auto file = file_window::open_regular(files->store().download_dir(project) / name, ec);
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
        res.set(http::field::content_type, "application/octet-stream");
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

/// Has the project record an output stored whole (output_received), and answers the client
/// once that is durable: success only then, an error if the project refuses it.
template <class Answer>
void record_output(caf::event_based_actor* self, const project_actor& actor,
                   const std::string& name, std::uint64_t host, std::uint64_t nbytes,
                   const std::string& md5, const Answer& answer) {
  self->request(actor, std::chrono::seconds(30), atom::upload_v, name, host, nbytes, md5)
    .then([answer](bool) { answer(0, std::nullopt, {}); },
          [name, answer](caf::error& err) {
            spdlog::info("upload of {} not recorded: {}", name, describe(err));
            answer(-1, std::nullopt, "upload of " + name + " refused: " + describe(err));
          });
}

void serve_upload(const file_routes_context& ctx, const std::string& project,
                  const project_actor& actor, request&& req, const responder& respond) {
  auto files = ctx.files;
  unsigned version = req.version();
  bool keep_alive = req.keep_alive();
  auto answer = [respond, version, keep_alive](int status, std::optional<long long> size,
                                               std::string_view message) {
    respond(text_response(version, keep_alive, http::status::ok,
                          upload_reply(status, size, message), "text/xml"));
  };
  auto body = std::make_shared<std::string>(std::move(req.body()));
  auto parsed = parse_upload_header(*body);
  if (!parsed) {
    spdlog::info("upload refused: {}", parsed.error);
    answer(-1, std::nullopt, parsed.error);
    return;
  }
  auto h = std::make_shared<upload_header>(std::move(*parsed.value));
  std::uint64_t host = 0;
  if (h->kind == upload_header::kind_t::file_upload) {
    auto who = files->verify(h->xml_signature, h->name);
    if (!who) {
      spdlog::info("upload of {} refused: missing or invalid signature", h->name);
      answer(-1, std::nullopt, "upload not authorized for " + h->name);
      return;
    }
    host = *who;
    auto data_len = body->size() - h->data_offset;
    if (static_cast<long long>(data_len) > h->nbytes - h->offset) {
      answer(-1, std::nullopt,
             "upload of " + h->name + " carries " + std::to_string(data_len)
               + " bytes, more than the " + std::to_string(h->nbytes - h->offset)
               + " its header announces");
      return;
    }
  }
  // The file pool never spawns or requests: a thread that spawns keeps CAF's logger, and
  // the pool outlives the actor system, whose destructor waits for the logger to go. It
  // hands a stored output back to this actor with a plain send.
  spawn_one_shot(*ctx.sys, [files, project, actor, h, body, host,
                            answer](caf::event_based_actor* self) {
    self->request(actor, std::chrono::seconds(30), atom::upload_v, h->name, host)
      .then(
        [self, files, project, actor, h, body, host, answer](double max_nbytes) {
          auto me = caf::actor_cast<caf::actor>(self);
          self->become(
            [self, actor, h, host, answer](atom::upload, std::uint64_t nbytes,
                                           const std::string& md5) {
              record_output(self, actor, h->name, host, nbytes, md5, answer);
              self->unbecome();
            },
            [self](atom::upload) { self->quit(); });
          files->post([me, files, project, h, body, answer, max_nbytes] {
            // Unless the output is handed back for recording, the actor has nothing to wait for.
            bool handed_back = false;
            auto release = caf::detail::make_scope_guard([&] {
              if (!handed_back)
                caf::anon_send(me, atom::upload_v);
            });
            auto cannot_store = [&](const std::string& why) {
              spdlog::error("upload of {}: {}", h->name, why);
              answer(1, std::nullopt, "the server could not store the file; retry later");
            };
            try {
              auto& store = files->store();
              auto stored = store.output_size(project, h->name);
              if (h->kind == upload_header::kind_t::get_file_size) {
                answer(0, static_cast<long long>(stored), {});
                return;
              }
              if (static_cast<double>(h->nbytes) > max_nbytes) {
                answer(-1, std::nullopt,
                       h->name + " is " + std::to_string(h->nbytes) + " bytes, over its limit of "
                         + std::to_string(static_cast<long long>(max_nbytes)));
                return;
              }
              if (static_cast<std::uint64_t>(h->offset) > stored) {
                answer(-1, std::nullopt,
                       "offset " + std::to_string(h->offset) + " is beyond the "
                         + std::to_string(stored) + " bytes stored of " + h->name);
                return;
              }
              auto data = std::string_view{*body}.substr(h->data_offset);
              // The request that completes the file has it hashed as it is written (after
              // the prefix a resumed upload stored before).
              auto offset = static_cast<std::uint64_t>(h->offset);
              bool completes = offset + data.size() >= static_cast<std::uint64_t>(h->nbytes);
              auto progress = store.write_output(project, h->name, offset, data, completes);
              if (!progress) {
                cannot_store(describe(progress.error()));
                return;
              }
              if (progress->size < static_cast<std::uint64_t>(h->nbytes) || !progress->md5) {
                // What arrived is kept; the client asks for the size and resumes there.
                answer(1, std::nullopt,
                       "upload of " + h->name + " is incomplete (" + std::to_string(progress->size)
                         + " of " + std::to_string(h->nbytes) + " bytes stored); resume");
                return;
              }
              // The client's md5 only refuses a damaged upload; what counts is the server's.
              if (!h->md5_cksum.empty() && *progress->md5 != h->md5_cksum) {
                store.remove_output(project, h->name);
                answer(1, std::nullopt,
                       "checksum of " + h->name + " does not match; upload it again");
                return;
              }
              handed_back = true;
              caf::anon_send(me, atom::upload_v, progress->size, *progress->md5);
            } catch (const std::exception& e) {
              cannot_store(e.what());
            }
          });
        },
        [h, answer](caf::error& err) {
          spdlog::info("upload of {} refused: {}", h->name, describe(err));
          answer(-1, std::nullopt, "unknown file " + h->name);
        });
  });
}

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
                             serve_download(shared->files, name, std::move(req), respond);
                           },
                           {}});
    routes.push_back(
      route{"/" + name + "/upload",
            true,
            {http::verb::post},
            shared->upload_limit,
            [shared, name = name, actor = actor](request&& req, const responder& respond) {
              serve_upload(*shared, name, actor, std::move(req), respond);
            },
            {}});
  }
  return routes;
}

void stage_input(const std::shared_ptr<file_service>& files, const std::string& project,
                 request&& req, const responder& respond) {
  unsigned version = req.version();
  bool keep_alive = req.keep_alive();
  auto body = std::make_shared<std::string>(std::move(req.body()));
  files->post([files, project, body, version, keep_alive, respond] {
    auto cannot_stage = [&](const std::string& why) {
      spdlog::error("staging an input of {}: {}", project, why);
      respond(text_response(version, keep_alive, http::status::internal_server_error,
                            nlohmann::json{{"error", why}}.dump(), "application/json"));
    };
    try {
      auto staged = files->store().stage(project, *body);
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
