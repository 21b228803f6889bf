// A small HTTP server for a long-running program's own pages (/metrics, a live report) on
// libmicrohttpd: ADDR:PORT, one handler per path (GET and HEAD; anything else 405, an
// unknown path 404), served by one thread of libmicrohttpd's own - so the handlers run one
// at a time, never on the caller's threads - and stopped cleanly (the thread joined, the
// socket closed) by stop() or the destructor.
//
// A handler runs on that thread: it must only read what is safe to read from there (a
// snapshot behind a mutex, atomics). Without libmicrohttpd at build time the server
// exists but start() refuses with one line saying so (available() is false), so that the
// programs build anyway and refuse --http with that line.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace insert::http {

struct Response {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    // Extra headers (name, value), e.g. a Content-Security-Policy.
    std::map<std::string, std::string> headers;
};

using Handler = std::function<Response()>;

// Whether this build has libmicrohttpd.
bool available();

// "ADDR:PORT" into its address and port: IPv4 (127.0.0.1:9464), IPv6 in brackets
// ([::1]:9464), a host name (localhost:9464), or no address (:9464, every address). PORT
// 0 takes a free port (port() says which). False with `error` naming `text`.
bool parse_address(std::string_view text, std::string& host, uint16_t& port, std::string& error);

class HttpServer {
  public:
    // `program` prefixes the server's own diagnostics on stderr ("insert-dp: http: ...").
    explicit HttpServer(std::string program);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Before start(): what GET `path` (exactly; the query string aside) answers.
    void handle(std::string path, Handler handler);

    // Binds ADDR:PORT and starts serving. False with `error` (one line naming the address:
    // in use, not an address of this machine, no permission, built without libmicrohttpd).
    bool start(std::string_view address, std::string& error);
    // Stops serving: waits for a request in progress, closes the socket. Idempotent.
    void stop();

    bool running() const { return daemon_ != nullptr; }
    uint16_t port() const { return port_; }  // the bound port, once started
    // "http://ADDR:PORT", as a client would reach it (a wildcard address as 127.0.0.1).
    const std::string& url() const { return url_; }

  private:
    struct Daemon;
    friend struct Daemon;

    std::string program_;
    std::map<std::string, Handler, std::less<>> handlers_;
    std::unique_ptr<Daemon> daemon_;
    uint16_t port_ = 0;
    std::string url_;
};

}  // namespace insert::http
