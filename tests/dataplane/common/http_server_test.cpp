// The HTTP server of --http (dataplane/common/http_server.hpp) on a loopback port: handlers
// per path, 404 and 405, the address forms, a port in use refused with one line, a clean
// stop (the socket closed, the port free again).
#include "dataplane/common/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

namespace insert::http {
namespace {

// One request over a fresh connection; the whole answer (headers and body).
std::string request(uint16_t port, const std::string& text) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return "connect failed";
    }
    (void)!::write(fd, text.data(), text.size());
    std::string answer;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) answer.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return answer;
}

std::string get(uint16_t port, const std::string& path, const std::string& method = "GET") {
    return request(port, method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

TEST(HttpAddress, forms) {
    std::string host, error;
    uint16_t port = 1;
    ASSERT_TRUE(parse_address("127.0.0.1:9464", host, port, error));
    EXPECT_EQ(host, "127.0.0.1");
    EXPECT_EQ(port, 9464);
    ASSERT_TRUE(parse_address(":0", host, port, error));
    EXPECT_EQ(host, "");
    EXPECT_EQ(port, 0);
    ASSERT_TRUE(parse_address("[::1]:80", host, port, error));
    EXPECT_EQ(host, "::1");
    ASSERT_TRUE(parse_address("localhost:80", host, port, error));
    EXPECT_EQ(host, "localhost");
    for (const char* bad :
         {"9464", "::1:80", "[::1]80", "[]:80", "h:", "h:65536", "h:-1", "h:8x"}) {
        error.clear();
        EXPECT_FALSE(parse_address(bad, host, port, error)) << bad;
        EXPECT_NE(error.find(bad), std::string::npos) << error;
    }
}

class HttpServerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!available()) GTEST_SKIP() << "built without libmicrohttpd";
    }
};

TEST_F(HttpServerTest, serves_handlers_per_path) {
    HttpServer server("test");
    std::atomic<int> calls{0};
    server.handle("/metrics", [&] {
        ++calls;
        Response r;
        r.body = "insert_up 1\n";
        return r;
    });
    server.handle("/", [] {
        Response r;
        r.content_type = "text/html; charset=utf-8";
        r.body = "<p>hi</p>";
        r.headers["Content-Security-Policy"] = "default-src 'none'";
        return r;
    });
    std::string error;
    ASSERT_TRUE(server.start("127.0.0.1:0", error)) << error;
    ASSERT_NE(server.port(), 0);
    EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()));

    const std::string m = get(server.port(), "/metrics?x=1");
    EXPECT_NE(m.find("HTTP/1.1 200"), std::string::npos) << m;
    EXPECT_NE(m.find("Content-Type: text/plain; charset=utf-8"), std::string::npos) << m;
    EXPECT_NE(m.find("Cache-Control: no-store"), std::string::npos) << m;
    EXPECT_NE(m.find("\r\n\r\ninsert_up 1\n"), std::string::npos) << m;
    EXPECT_EQ(calls.load(), 1);

    const std::string page = get(server.port(), "/");
    EXPECT_NE(page.find("Content-Security-Policy: default-src 'none'"), std::string::npos);
    EXPECT_NE(page.find("<p>hi</p>"), std::string::npos);

    const std::string head = get(server.port(), "/metrics", "HEAD");
    EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
    EXPECT_EQ(head.find("insert_up"), std::string::npos) << head;

    const std::string missing = get(server.port(), "/nope");
    EXPECT_NE(missing.find("HTTP/1.1 404"), std::string::npos) << missing;
    EXPECT_NE(missing.find("/metrics"), std::string::npos) << missing;

    const std::string post = request(
        server.port(),
        "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    EXPECT_NE(post.find("HTTP/1.1 405"), std::string::npos) << post;
    EXPECT_NE(post.find("Allow: GET, HEAD"), std::string::npos) << post;

    const uint16_t port = server.port();
    server.stop();
    EXPECT_FALSE(server.running());
    EXPECT_EQ(get(port, "/metrics"), "connect failed");
    // The port is free again: a new server binds it.
    HttpServer again("test");
    ASSERT_TRUE(again.start("127.0.0.1:" + std::to_string(port), error)) << error;
}

TEST_F(HttpServerTest, a_port_in_use_is_one_line) {
    HttpServer first("test"), second("test");
    std::string error;
    ASSERT_TRUE(first.start("127.0.0.1:0", error)) << error;
    const std::string address = "127.0.0.1:" + std::to_string(first.port());
    EXPECT_FALSE(second.start(address, error));
    EXPECT_EQ(error, address + ": Address already in use");
    EXPECT_FALSE(second.start("203.0.113.7:0", error));  // not an address of this machine
    EXPECT_NE(error.find("203.0.113.7:0: "), std::string::npos) << error;
    EXPECT_FALSE(second.start("no.such.host.invalid:1", error));
    EXPECT_NE(error.find("not an address"), std::string::npos) << error;
}

TEST_F(HttpServerTest, a_throwing_handler_is_a_500) {
    HttpServer server("test");
    server.handle("/x", []() -> Response { throw std::runtime_error("boom"); });
    std::string error;
    ASSERT_TRUE(server.start("127.0.0.1:0", error)) << error;
    const std::string r = get(server.port(), "/x");
    EXPECT_NE(r.find("HTTP/1.1 500"), std::string::npos) << r;
    EXPECT_NE(r.find("boom"), std::string::npos) << r;
}

}  // namespace
}  // namespace insert::http
