#include "dataplane/common/http_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>

#ifdef INSERT_HAVE_MICROHTTPD
#include <microhttpd.h>
#endif

namespace insert::http {

namespace {

bool parse_port(std::string_view text, uint16_t& port) {
    if (text.empty() || text.size() > 5) return false;
    unsigned v = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v > 65535) return false;
    port = static_cast<uint16_t>(v);
    return true;
}

}  // namespace

bool parse_address(std::string_view text, std::string& host, uint16_t& port, std::string& error) {
    std::string_view h, p;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            error = std::string(text) + ": expected [IPV6]:PORT";
            return false;
        }
        h = text.substr(1, close - 1);
        p = text.substr(close + 2);
        if (h.empty()) {
            error = std::string(text) + ": empty IPv6 address";
            return false;
        }
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            error = std::string(text) + ": expected ADDR:PORT (e.g. 127.0.0.1:9464 or :9464)";
            return false;
        }
        h = text.substr(0, colon);
        p = text.substr(colon + 1);
        if (h.find(':') != std::string_view::npos) {
            error = std::string(text) + ": an IPv6 address goes in brackets ([::1]:9464)";
            return false;
        }
    }
    if (!parse_port(p, port)) {
        error = std::string(text) + ": PORT must be a number from 0 to 65535";
        return false;
    }
    host = std::string(h);
    return true;
}

#ifdef INSERT_HAVE_MICROHTTPD

namespace {

// Connections served at once, and how long an idle one is kept: a scraper or a browser
// needs one or two; more are refused (libmicrohttpd closes them) rather than queued.
constexpr unsigned kMaxConnections = 32;
constexpr unsigned kIdleTimeoutS = 10;
constexpr int kListenBacklog = 32;

// A listening socket on host:port, or -1 with `error`.
int listen_on(const std::string& host, uint16_t port, bool& ipv6, uint16_t& bound,
              std::string& error) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    const int rc =
        ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
    if (rc != 0) {
        error = "not an address: " + std::string(gai_strerror(rc));
        return -1;
    }
    // Without an address: every IPv4 address (AI_PASSIVE lists IPv4 first on Linux).
    const addrinfo* a = found;
    if (host.empty())
        for (const addrinfo* p = found; p; p = p->ai_next)
            if (p->ai_family == AF_INET) {
                a = p;
                break;
            }
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error = std::string("socket: ") + std::strerror(errno);
        ::freeaddrinfo(found);
        return -1;
    }
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, kListenBacklog) != 0) {
        error = std::strerror(errno);
        ::close(fd);
        ::freeaddrinfo(found);
        return -1;
    }
    ipv6 = a->ai_family == AF_INET6;
    ::freeaddrinfo(found);
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    bound = ntohs(ipv6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                       : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    return fd;
}

}  // namespace

struct HttpServer::Daemon {
    MHD_Daemon* mhd = nullptr;

    static void log(void* cls, const char* format, va_list args) {
        const auto* self = static_cast<const HttpServer*>(cls);
        char text[512];
        std::vsnprintf(text, sizeof text, format, args);
        std::size_t n = std::strlen(text);
        while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r')) text[--n] = '\0';
        std::fprintf(stderr, "%s: http: %s\n", self->program_.c_str(), text);
    }

    static MHD_Result access(void* cls, MHD_Connection* connection, const char* url,
                             const char* method, const char*, const char*, size_t* upload_size,
                             void**) {
        const auto* self = static_cast<const HttpServer*>(cls);
        Response r;
        if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0) {
            r.status = 405;
            r.body = "only GET and HEAD\n";
            r.headers["Allow"] = "GET, HEAD";
        } else if (*upload_size != 0) {
            *upload_size = 0;  // a GET with a body: ignored
            return MHD_YES;
        } else if (const auto it = self->handlers_.find(std::string_view(url));
                   it == self->handlers_.end()) {
            r.status = 404;
            r.body = "not found: the paths served are";
            for (const auto& [path, handler] : self->handlers_) r.body += " " + path;
            r.body += "\n";
        } else {
            try {
                r = it->second();
            } catch (const std::exception& e) {
                r = Response{};
                r.status = 500;
                r.body = std::string("internal error: ") + e.what() + "\n";
            }
        }
        MHD_Response* response =
            MHD_create_response_from_buffer(r.body.size(), r.body.data(), MHD_RESPMEM_MUST_COPY);
        if (response == nullptr) return MHD_NO;
        MHD_add_response_header(response, "Content-Type", r.content_type.c_str());
        MHD_add_response_header(response, "Cache-Control", "no-store");
        for (const auto& [name, value] : r.headers)
            MHD_add_response_header(response, name.c_str(), value.c_str());
        const MHD_Result queued =
            MHD_queue_response(connection, static_cast<unsigned>(r.status), response);
        MHD_destroy_response(response);
        return queued;
    }
};

bool available() {
    return true;
}

bool HttpServer::start(std::string_view address, std::string& error) {
    stop();
    std::string host;
    uint16_t port = 0;
    if (!parse_address(address, host, port, error)) return false;
    bool ipv6 = false;
    const int fd = listen_on(host, port, ipv6, port_, error);
    if (fd < 0) {
        error = std::string(address) + ": " + error;
        return false;
    }
    // The server's thread takes no signal: SIGINT/SIGTERM stay with the threads that wait
    // for them (a signalfd, or handlers that expect the main thread).
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    auto daemon = std::make_unique<Daemon>();
    daemon->mhd =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
                             (ipv6 ? MHD_USE_IPv6 : 0),
                         0, nullptr, nullptr, &Daemon::access, this,
                         // The logger first: libmicrohttpd says so otherwise, through its own.
                         MHD_OPTION_EXTERNAL_LOGGER, &Daemon::log, this, MHD_OPTION_LISTEN_SOCKET,
                         fd, MHD_OPTION_CONNECTION_LIMIT, kMaxConnections,
                         MHD_OPTION_CONNECTION_TIMEOUT, kIdleTimeoutS, MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (daemon->mhd == nullptr) {
        ::close(fd);
        error = std::string(address) + ": libmicrohttpd did not start";
        return false;
    }
    daemon_ = std::move(daemon);
    const std::string shown = host.empty() || host == "0.0.0.0" ? "127.0.0.1"
                              : host == "::"                    ? "[::1]"
                              : ipv6                            ? "[" + host + "]"
                                                                : host;
    url_ = "http://" + shown + ":" + std::to_string(port_);
    return true;
}

void HttpServer::stop() {
    if (!daemon_) return;
    MHD_stop_daemon(daemon_->mhd);  // joins its thread, closes the listening socket
    daemon_.reset();
}

#else  // built without libmicrohttpd

struct HttpServer::Daemon {};

bool available() {
    return false;
}

bool HttpServer::start(std::string_view address, std::string& error) {
    std::string host;
    uint16_t port = 0;
    if (!parse_address(address, host, port, error)) return false;
    error = std::string(address) +
            ": this program was built without libmicrohttpd (install libmicrohttpd-dev - "
            "scripts/setup.sh - and rebuild)";
    return false;
}

void HttpServer::stop() {}

#endif

HttpServer::HttpServer(std::string program) : program_(std::move(program)) {}

HttpServer::~HttpServer() {
    stop();
}

void HttpServer::handle(std::string path, Handler handler) {
    handlers_[std::move(path)] = std::move(handler);
}

}  // namespace insert::http
