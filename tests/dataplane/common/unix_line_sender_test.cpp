// UnixLineSender (dataplane/common/unix_line_sender.hpp) against a listener of the test's
// own: started before the collector, reconnected after it went away, whole lines only (a
// line cut by a lost connection is not resent in part), the buffer's bound, what finish()
// delivers and counts.
#include "dataplane/common/unix_line_sender.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

namespace insert {
namespace {

using namespace std::chrono_literals;

class Listener {
  public:
    explicit Listener(const std::string& path) : path_(path) {
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
        ::unlink(path.c_str());
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
        EXPECT_EQ(::listen(fd_, 8), 0);
    }
    ~Listener() {
        if (conn_ >= 0) ::close(conn_);
        ::close(fd_);
        ::unlink(path_.c_str());
    }
    // Accepts the sender's connection (waiting for it up to `wait`).
    bool accept(std::chrono::milliseconds wait) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(wait.count())) != 1) return false;
        conn_ = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        return conn_ >= 0;
    }
    // What arrived within `wait`.
    std::string read(std::chrono::milliseconds wait) {
        std::string got;
        char buf[65536];
        const auto end = std::chrono::steady_clock::now() + wait;
        while (std::chrono::steady_clock::now() < end) {
            pollfd p{conn_, POLLIN, 0};
            if (::poll(&p, 1, 10) != 1) continue;
            const ssize_t n = ::read(conn_, buf, sizeof buf);
            if (n <= 0) break;
            got.append(buf, static_cast<std::size_t>(n));
        }
        return got;
    }
    void drop_connection() {
        ::close(conn_);
        conn_ = -1;
    }

  private:
    std::string path_;
    int fd_ = -1;
    int conn_ = -1;
};

std::string socket_path(const char* name) {
    return "/tmp/insert-sender-" + std::to_string(::getpid()) + "-" + name + ".sock";
}

// pump() until connected (the backoff starts at 0.1 s).
bool pump_until_connected(UnixLineSender& s) {
    for (int i = 0; i < 300 && !s.connected(); ++i) {
        std::this_thread::sleep_for(10ms);
        s.pump();
    }
    return s.connected();
}

TEST(UnixLineSender, RefusesPathsNoSocketCanHave) {
    std::string error;
    EXPECT_FALSE(UnixLineSender::valid_path("", error));
    EXPECT_FALSE(UnixLineSender::valid_path(std::string(200, 'a'), error));
    EXPECT_NE(error.find("cannot name a Unix socket"), std::string::npos);
    EXPECT_TRUE(UnixLineSender::valid_path("/run/insert/correlator.sock", error));
}

TEST(UnixLineSender, StartsBeforeTheCollectorAndDeliversWhatWaited) {
    const std::string path = socket_path("late");
    ::unlink(path.c_str());
    UnixLineSender s(path, "test", 1 << 20);
    EXPECT_FALSE(s.start());
    s.write("{\"a\":1}\n{\"a\":");  // a line cut by the caller is completed later
    s.write("2}\n");
    Listener l(path);
    ASSERT_TRUE(pump_until_connected(s));
    ASSERT_TRUE(l.accept(1000ms));
    s.pump();
    EXPECT_EQ(l.read(200ms), "{\"a\":1}\n{\"a\":2}\n");
    EXPECT_EQ(s.counts().connects, 1u);
    EXPECT_EQ(s.counts().dropped, 0u);
}

TEST(UnixLineSender, ReconnectsAfterTheCollectorWentAway) {
    const std::string path = socket_path("restart");
    UnixLineSender s(path, "test", 1 << 20);
    {
        Listener first(path);
        ASSERT_TRUE(s.start());
        ASSERT_TRUE(first.accept(1000ms));
        s.write("one\n");
        EXPECT_EQ(first.read(200ms), "one\n");
    }                  // the collector stops (its socket file goes too)
    s.write("two\n");  // the send that finds it gone, or kept for later
    s.write("three\n");
    EXPECT_FALSE(s.connected());
    Listener second(path);
    ASSERT_TRUE(pump_until_connected(s));
    ASSERT_TRUE(second.accept(1000ms));
    s.pump();
    const std::string got = second.read(300ms);
    // "two" went into the first connection's buffer when the peer had not closed yet, or
    // waited: either way only whole lines arrive, and "three" does.
    EXPECT_TRUE(got == "two\nthree\n" || got == "three\n") << got;
    EXPECT_EQ(s.counts().connects, 2u);
    EXPECT_EQ(s.counts().dropped, 0u);
}

TEST(UnixLineSender, DropsWhatDoesNotFitAndCountsIt) {
    const std::string path = socket_path("full");
    ::unlink(path.c_str());
    UnixLineSender s(path, "test", 4096);
    EXPECT_FALSE(s.start());
    const std::string line = std::string(99, 'x') + "\n";  // 100 bytes
    for (int i = 0; i < 100; ++i) s.write(line);           // 10,000 bytes: 40 fit
    EXPECT_EQ(s.counts().dropped, 60u);
    Listener l(path);
    ASSERT_TRUE(pump_until_connected(s));
    ASSERT_TRUE(l.accept(1000ms));
    s.pump();
    EXPECT_EQ(l.read(200ms).size(), 4000u);
}

TEST(UnixLineSender, ALineCutByALostConnectionIsNotResentInPart) {
    const std::string path = socket_path("cut");
    UnixLineSender s(path, "test", 64 << 20);
    auto first = std::make_unique<Listener>(path);
    ASSERT_TRUE(s.start());
    ASSERT_TRUE(first->accept(1000ms));
    // Lines far bigger than the socket's buffer: the collector reads part of them only.
    const std::string big = std::string(1 << 20, 'y') + "\n";
    for (int i = 0; i < 8; ++i) s.write(big);
    const std::string part = first->read(100ms);
    ASSERT_GT(part.size(), 0u);
    ASSERT_LT(part.size(), 8 * big.size());
    first.reset();  // away with lines half sent
    for (int i = 0; i < 20 && s.connected(); ++i) s.pump();
    ASSERT_FALSE(s.connected());
    Listener second(path);
    ASSERT_TRUE(pump_until_connected(s));
    ASSERT_TRUE(second.accept(1000ms));
    std::string got;
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    auto quiet_since = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - quiet_since < 300ms &&
           std::chrono::steady_clock::now() < give_up) {
        s.pump();
        const std::string more = second.read(20ms);
        if (!more.empty()) quiet_since = std::chrono::steady_clock::now();
        got += more;
    }
    // Whole lines only: the one cut (and whatever the old socket swallowed) is dropped.
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.size() % big.size(), 0u);
    EXPECT_EQ(got.back(), '\n');
    EXPECT_EQ(got.find('\n'), big.size() - 1);
    EXPECT_GE(s.counts().dropped, 1u);
    EXPECT_EQ(s.counts().connects, 2u);
}

TEST(UnixLineSender, FinishDeliversOrCountsWhatIsLeft) {
    const std::string path = socket_path("finish");
    ::unlink(path.c_str());
    {
        UnixLineSender s(path, "test", 1 << 20);
        EXPECT_FALSE(s.start());
        s.write("a\nb\nc");  // "c" never ends
        EXPECT_FALSE(s.finish(50ms));
        EXPECT_EQ(s.counts().dropped, 3u);
    }
    Listener l(path);
    UnixLineSender s(path, "test", 1 << 20);
    ASSERT_TRUE(s.start());
    ASSERT_TRUE(l.accept(1000ms));
    s.write("a\nb\n");
    EXPECT_TRUE(s.finish(1s));
    EXPECT_EQ(l.read(200ms), "a\nb\n");
    EXPECT_EQ(s.counts().dropped, 0u);
}

}  // namespace
}  // namespace insert
