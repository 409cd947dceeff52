#pragma once

/// Internal to net/: one HTTP connection and what all connections of a server share.

#include "net/http_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <shared_mutex>

namespace cobble::net::detail {

/// Closed by stop(): responders hold it shared while they hand a response to a session, so that
/// none does once the server is going away (its io_context may be destroyed next).
struct http_gate {
  std::shared_mutex mtx;
  bool open = true; ///< Guarded by `mtx`.
};

/// What every session of one server shares. Owned by the server; outlives every session
/// because the io_context (which holds the last references to sessions) is destroyed first.
struct http_context {
  server_options opts;
  std::vector<route> routes;
  server_stats stats;
  std::shared_ptr<http_gate> gate = std::make_shared<http_gate>();
};

class responder_state;

/// One connection. Owns itself: the pending Asio operation holds a reference, and while a
/// handler owes a response the session holds one to itself (`self_`), broken by the response
/// or by close(). Responders refer to it weakly. Everything but deliver() and close() runs on
/// the session's strand (the executor of its socket).
class http_session : public std::enable_shared_from_this<http_session> {
public:
  /// Takes over an accepted socket whose executor is a strand of its own.
  http_session(boost::asio::ip::tcp::socket socket, http_context& ctx);
  ~http_session();

  /// Starts reading the first request. Call once, from any thread.
  void start();

  /// Closes the connection and drops the pending request, if any. Any thread.
  void close();

  /// Hands the response of the pending request to the strand. Any thread.
  void deliver(response_maker make);

private:
  // -- reading a request ---------------------------------------------------------------------

  void read_next();
  void on_first_bytes(boost::beast::error_code ec, std::size_t n);
  void read_header();
  void on_header(boost::beast::error_code ec, std::size_t n);
  void on_continue(boost::beast::error_code ec, std::size_t n);
  void read_body();
  void on_body(boost::beast::error_code ec, std::size_t n);
  void on_read_error(boost::beast::error_code ec);
  // -- streaming a body to a route's sink ------------------------------------------------------
  void open_sink();
  void read_piece();
  void on_piece(boost::beast::error_code ec, std::size_t n);
  /// The sink took the last piece: the next one, or the end of the body.
  void after_piece();
  /// The body will not be read to its end: tells the sink, which keeps what it has.
  void cut_sink();

  // -- answering -----------------------------------------------------------------------------

  void dispatch();
  void on_response(outgoing res);
  void reply_error(http::status status, std::string body, bool close);
  void write(response res, bool close);
  void on_write(boost::beast::error_code ec, std::size_t n);
  /// A response was written (or failed): the next request, or the close it asked for.
  void after_write(boost::beast::error_code ec, bool close);
  void write_file(file_response res);
  void write_file_part();
  void on_file_part(boost::beast::error_code ec, std::size_t n);

  // -- closing -------------------------------------------------------------------------------

  void linger_close();
  void linger_read();
  void close_now();

  http_context& ctx_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  /// The parser of a streamed body (the header's parser, converted), its sink, and the piece
  /// being read into.
  std::optional<http::request_parser<http::buffer_body>> stream_parser_;
  std::shared_ptr<body_sink> sink_;
  std::weak_ptr<responder_state> sink_responder_; ///< Behind the responder the sink got.
  std::string piece_;
  bool sink_done_ = false;           ///< finish() or cut() was called, or the sink answered.
  std::uint64_t request_number_ = 0; ///< Of the current request on this connection.
  std::optional<http::response<http::empty_body>> continue_; ///< A 100 being written.
  std::optional<response> res_;                              ///< The response being written.
  std::optional<file_response> file_res_;                    ///< A file response being written, or:
  std::optional<http::response_serializer<http::basic_file_body<file_window>>>
    file_out_;                              ///< Its serializer.
  const route* route_ = nullptr;            ///< Route of the current request.
  unsigned version_ = 11;                   ///< Of the current request.
  bool keep_alive_ = false;                 ///< Of the current request.
  http::verb method_ = http::verb::unknown; ///< Of the current request.
  bool first_ = true;                       ///< No request header read yet on this connection.
  bool closed_ = false;                     ///< close_now() ran.
  std::size_t lingered_ = 0;                ///< Bytes discarded while lingering.
  std::shared_ptr<http_session> self_;      ///< Set while a handler owes a response.
};

} // namespace cobble::net::detail
