#pragma once

/// Where a scheduler RPC's reply goes once its events are durable: data through the log's
/// barrier, not code. The edge (net/) parks each request under a token and hands the token
/// to the project with the request; the project appends the RPC's events together with the
/// answer (token and reply); right after the commit that makes them durable the log actor
/// hands the answer to the port, which the edge implements by rendering the reply on the
/// connection's strand. Tests and the emulator's harness implement the port to collect the
/// replies.

#include "actors/rpc.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace cobble {

/// Identifies one scheduler RPC waiting at the edge for its reply; opaque to the actors.
using rpc_token = std::uint64_t;

/// A finished scheduler reply and the RPC it answers.
struct rpc_answer {
  rpc_token token = 0;
  std::shared_ptr<const sched_reply> reply;
};

/// Receives the answers of scheduler RPCs. Called by the log actor, on its thread, right after
/// the commit that made an answer's events durable (at once for an answer without events).
/// Implementations must be thread-safe and must not block.
class rpc_port {
public:
  virtual ~rpc_port() = default;
  /// Takes the reply of the RPC `token` names. Called once per token.
  virtual void answer(rpc_token token, std::shared_ptr<const sched_reply> reply) = 0;
};

/// The usual port: each RPC's continuation waits under its token until the log answers. The
/// edge parks one per request (it posts the rendering to the connection's strand); tests and
/// the emulator park ones that collect the replies.
class parked_rpcs final : public rpc_port {
public:
  /// Takes the reply of one RPC. Called once, on the thread that calls answer().
  using continuation = std::function<void(std::shared_ptr<const sched_reply>)>;

  /// Parks `k` and returns the token to send with the request. Any thread.
  rpc_token park(continuation k);

  /// Hands `reply` to the continuation parked under `token` (an unknown token, answered
  /// already or never parked, is ignored). Any thread.
  void answer(rpc_token token, std::shared_ptr<const sched_reply> reply) override;

  /// Drops the continuation parked under `token` without calling it (a caller that gave up).
  void cancel(rpc_token token);

  /// How many RPCs wait for their reply (for /metrics).
  std::size_t waiting() const;

private:
  mutable std::mutex mtx_;
  rpc_token next_ = 1;
  std::unordered_map<rpc_token, continuation> parked_;
};

} // namespace cobble
