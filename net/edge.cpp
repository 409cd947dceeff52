#include "net/edge.hpp"

#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "net/boinc_xml.hpp"
#include "net/files.hpp"
#include "net/one_shot.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace cobble::net {

response shaped(const reply_shape& shape, http::status status, std::string body,
                std::string_view content_type) {
  response res{status, shape.version};
  res.set(http::field::server, "cobble");
  res.set(http::field::content_type, content_type);
  res.keep_alive(shape.keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

namespace {

/// The XML of a scheduler reply, each output file signed for the host (the upload handler
/// accepts the file only with its token). Runs on the connection's strand.
std::string
render_reply(const edge_context& ctx, const sched_reply& reply, const reply_urls& urls) {
  try {
    if (ctx.files
        && std::any_of(reply.files.begin(), reply.files.end(),
                       [](const file_description& f) { return f.is_output; })) {
      auto signed_reply = reply;
      for (auto& f : signed_reply.files)
        if (f.is_output)
          f.xml_signature = ctx.files->sign(f.name, reply.host);
      return write_sched_reply(signed_reply, urls);
    }
    return write_sched_reply(reply, urls);
  } catch (const std::exception& e) {
    spdlog::error("scheduler reply could not be written: {}", e.what());
    return write_sched_reply(sched_reply::error("The server had a problem; it will be retried.",
                                                ctx.error_request_delay),
                             urls);
  }
}

void serve_scheduler(const std::shared_ptr<edge_context>& ctx, const std::string& name,
                     const project_actor& project, request&& req, const responder& respond) {
  auto start = std::chrono::steady_clock::now();
  reply_shape shape{req.version(), req.keep_alive()};
  reply_urls urls{base_url(*ctx, req), name};
  auto parsed = parse_sched_request(req.body());
  if (!parsed) {
    ctx->metrics->rpc_refused++;
    ctx->metrics->rpc_answered();
    spdlog::info("scheduler request refused: {}", parsed.error);
    auto reply = sched_reply::error("Cobble could not read the scheduler request: " + parsed.error,
                                    ctx->error_request_delay);
    respond(shaped(shape, http::status::ok, write_sched_reply(reply, urls), "text/xml"));
    return;
  }
  if (ctx->disk && ctx->disk->low()) {
    // Refused before any decision: the client keeps its results and asks again later.
    ctx->metrics->rpc_refused++;
    ctx->metrics->rpc_answered();
    auto reply = sched_reply::error("The project's server is low on disk space and accepts no "
                                    "changes for now; the request will be retried later.",
                                    ctx->error_request_delay);
    respond(shaped(shape, http::status::ok, write_sched_reply(reply, urls), "text/xml"));
    return;
  }
  auto rq = std::make_shared<const sched_request>(std::move(*parsed.value));
  // Runs on the log actor's thread right after the commit that made the reply's events
  // durable: it only hands the rendering to the connection's strand.
  auto token = ctx->port->park([ctx, reported = rq->results.size(), urls = std::move(urls), shape,
                                respond, start](std::shared_ptr<const sched_reply> reply) {
    respond.later([ctx, reported, urls, shape, start, reply = std::move(reply)] {
      auto& m = *ctx->metrics;
      m.rpc_answered();
      if (reply->userid == 0)
        m.rpc_refused++;
      m.jobs_sent += reply->results.size();
      m.results_reported += reported;
      auto res = shaped(shape, http::status::ok, render_reply(*ctx, *reply, urls), "text/xml");
      m.rpc_latency.observe(std::chrono::steady_clock::now() - start);
      return res;
    });
  });
  caf::anon_send(project, atom::rpc_v, sched_request_ptr{std::move(rq)}, token);
}

} // namespace

std::string base_url(const edge_context& ctx, const request& req) {
  if (!ctx.public_url.empty()) {
    auto url = ctx.public_url;
    while (!url.empty() && url.back() == '/')
      url.pop_back();
    return url;
  }
  auto host = req[http::field::host];
  if (host.empty())
    return "http://127.0.0.1";
  return "http://" + std::string{host};
}

namespace {

/// /metrics: the edge's counters, the log's, each project's gauges and the RPCs waiting. A
/// one-shot actor asks the log and every project at once and renders after the last answer;
/// no Asio thread waits.
void serve_metrics(const std::shared_ptr<edge_context>& ctx, const request& req,
                   const responder& respond) {
  reply_shape shape{req.version(), req.keep_alive()};
  spawn_one_shot(*ctx->sys, [ctx, shape, respond](caf::event_based_actor* self) {
    struct scrape {
      actor_readings readings;
      std::size_t pending = 0;
      bool failed = false;
    };
    auto st = std::make_shared<scrape>();
    st->readings.projects.resize(ctx->projects.size());
    st->pending = ctx->projects.size() + 1;
    auto answered = [ctx, shape, respond, st] {
      if (--st->pending > 0 || st->failed)
        return;
      static const server_stats none{};
      st->readings.rpcs_waiting = ctx->port ? ctx->port->waiting() : 0;
      respond(shaped(shape, http::status::ok,
                     render_metrics(*ctx->metrics, ctx->http ? *ctx->http : none, st->readings,
                                    ctx->admin_http),
                     "text/plain; version=0.0.4"));
    };
    auto fail = [shape, respond, st](caf::error& err) {
      if (std::exchange(st->failed, true))
        return;
      respond(shaped(shape, http::status::service_unavailable, describe(err) + "\n", "text/plain"));
    };
    constexpr auto timeout = std::chrono::seconds(10);
    self->request(ctx->log, timeout, atom::status_v)
      .then(
        [st, answered](const log_status_ptr& log) {
          st->readings.log = *log;
          answered();
        },
        fail);
    std::size_t i = 0;
    for (const auto& entry : ctx->projects) {
      self->request(entry.second, timeout, atom::status_v, atom::host_v)
        .then(
          [st, answered, i](const project_gauges_ptr& g) {
            st->readings.projects[i] = *g;
            answered();
          },
          fail);
      ++i;
    }
  });
}

} // namespace

std::vector<route> edge_routes(const std::shared_ptr<edge_context>& ctx) {
  if (!ctx->port)
    throw std::invalid_argument("edge_routes: the context has no RPC port");
  std::vector<route> routes;
  for (const auto& [name, project] : ctx->projects) {
    routes.push_back(
      route{"/" + name + "/cgi",
            true,
            {http::verb::post},
            0,
            [ctx, name = name, project = project](request&& req, const responder& respond) {
              serve_scheduler(ctx, name, project, std::move(req), respond);
            },
            {},
            {}});
  }
  routes.push_back(route{"/healthz",
                         true,
                         {http::verb::get, http::verb::head},
                         0,
                         [](request&& req, const responder& respond) {
                           respond(make_response(req, http::status::ok, "ok\n"));
                         },
                         {},
                         {}});
  routes.push_back(
    route{"/metrics",
          true,
          {http::verb::get},
          0,
          [ctx](request&& req, const responder& respond) { serve_metrics(ctx, req, respond); },
          {},
          {}});
  return routes;
}

} // namespace cobble::net
