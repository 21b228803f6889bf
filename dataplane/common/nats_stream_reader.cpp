#include "dataplane/common/nats_stream_reader.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/nats_library.hpp"

#ifdef INSERT_HAVE_NATS
#include <nats/nats.h>

#include "dataplane/common/nats_connect.hpp"
#endif

namespace insert {

// Fills the messages handed to the callback (StreamMessage's friend).
struct StreamReading {
    static StreamMessage message(const void* msg, uint64_t seq) {
        StreamMessage m;
        m.msg_ = msg;
        m.seq_ = seq;
        return m;
    }
};

#ifdef INSERT_HAVE_NATS

namespace {

using Clock = std::chrono::steady_clock;

// Requests to JetStream's API (stream info, message get).
constexpr int64_t kApiWaitMs = 5000;
// One connection attempt at most (a server that does not answer), within the wait.
constexpr int64_t kConnectTimeoutMs = 2000;

// The reading's client: its options, connection and JetStream context, destroyed in order.
struct Client {
    natsOptions* opts = nullptr;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    ~Client() {
        if (js) jsCtx_Destroy(js);
        if (nc) natsConnection_Destroy(nc);
        if (opts) natsOptions_Destroy(opts);
    }
};

// Connects, trying again with backoff until `deadline`; said once when the first try fails.
bool connect(const StreamReadConfig& config, Client& c, StreamReadResult& r) {
    // Lost in the middle: reconnected in the background while the message gets are tried
    // again; the first connection is tried here, until the deadline.
    natsStatus s = nats_connect::client_options(&c.opts, config.servers, config.client, false,
                                                nullptr, nullptr, nullptr);
    if (s == NATS_OK) s = natsOptions_SetTimeout(c.opts, kConnectTimeoutMs);
    if (s != NATS_OK) {
        r.error = "cannot set up the client: " + nats_connect::status_text(s);
        return false;
    }
    const Clock::time_point deadline = Clock::now() + config.wait;
    for (int attempts = 1;; ++attempts) {
        s = natsConnection_Connect(&c.nc, c.opts);
        if (s == NATS_OK) break;
        c.nc = nullptr;
        if (s != NATS_NO_SERVER) {
            r.error = "cannot connect: " + nats_connect::status_text(s);
            return false;
        }
        const Clock::time_point now = Clock::now();
        if (now >= deadline) {
            r.status = StreamReadResult::Status::unreachable;
            char waited[32];
            std::snprintf(waited, sizeof waited, "%g",
                          std::chrono::duration<double>(config.wait).count());
            r.error =
                std::string("cannot reach the bus (no server answered within ") + waited + " s)";
            return false;
        }
        if (attempts == 1)
            std::fprintf(stderr,
                         "%s: cannot reach the bus (no server answered); waiting up to %.1f s, "
                         "trying again with backoff (0.1 s doubling to 2 s)\n",
                         config.label.c_str(), std::chrono::duration<double>(config.wait).count());
        // The last attempt at the deadline.
        std::this_thread::sleep_for(std::min<Clock::duration>(
            std::chrono::milliseconds(nats_client::backoff_ms(attempts)), deadline - now));
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = kApiWaitMs;
    s = natsConnection_JetStream(&c.js, c.nc, &jo);
    if (s != NATS_OK) {
        r.error = "no JetStream context: " + nats_connect::status_text(s);
        return false;
    }
    return true;
}

}  // namespace

StreamReadResult read_stream(const StreamReadConfig& config,
                             const std::function<void(const StreamMessage&)>& each) {
    StreamReadResult r;
    if (config.servers.empty()) {
        r.error = "no server";
        return r;
    }
    if (!nats_client::valid_prefix(config.stream)) {
        r.error = "stream " + config.stream + ": not a stream name";
        return r;
    }
    nats_library::hold();
    {
        Client c;
        if (connect(config, c, r)) {
            jsStreamInfo* si = nullptr;
            jsErrCode jerr = static_cast<jsErrCode>(0);
            natsStatus s = js_GetStreamInfo(&si, c.js, config.stream.c_str(), nullptr, &jerr);
            if (s == NATS_NOT_FOUND) {
                r.status = StreamReadResult::Status::no_stream;
                r.error = "no stream " + config.stream + " on the bus";
            } else if (s != NATS_OK) {
                r.error = "stream " + config.stream + ": " + nats_connect::status_text(s);
            } else {
                if (si->State.Msgs > 0) {
                    r.first_seq = si->State.FirstSeq;
                    r.last_seq = si->State.LastSeq;
                }
                jsStreamInfo_Destroy(si);
                r.status = StreamReadResult::Status::ok;
                // The snapshot, one message get each; a failure other than a deleted message
                // (the bus lost) is tried again with backoff, for `wait` at most.
                int attempts = 0;
                Clock::time_point failing_since{};
                for (uint64_t seq = r.first_seq; seq != 0 && seq <= r.last_seq;) {
                    natsMsg* m = nullptr;
                    s = js_GetMsg(&m, c.js, config.stream.c_str(), seq, nullptr, &jerr);
                    if (s == NATS_OK) {
                        each(StreamReading::message(m, seq));
                        natsMsg_Destroy(m);
                        ++r.messages;
                    }
                    if (s == NATS_OK || s == NATS_NOT_FOUND) {
                        ++seq;
                        attempts = 0;
                        continue;
                    }
                    if (attempts == 0) failing_since = Clock::now();
                    const auto rest =
                        std::chrono::milliseconds(nats_client::backoff_ms(++attempts));
                    if (Clock::now() + rest - failing_since > config.wait) {
                        r.status = StreamReadResult::Status::failed;
                        r.error = "stream " + config.stream + ": message " + std::to_string(seq) +
                                  " of " + std::to_string(r.first_seq) + "-" +
                                  std::to_string(r.last_seq) + ": " + nats_connect::status_text(s);
                        break;
                    }
                    std::this_thread::sleep_for(rest);
                }
            }
        }
    }
    nats_library::release({});
    return r;
}

std::string_view StreamMessage::subject() const {
    const char* s =
        msg_ ? natsMsg_GetSubject(static_cast<natsMsg*>(const_cast<void*>(msg_))) : nullptr;
    return s ? std::string_view(s) : std::string_view();
}

std::string_view StreamMessage::data() const {
    if (!msg_) return {};
    auto* m = static_cast<natsMsg*>(const_cast<void*>(msg_));
    const char* d = natsMsg_GetData(m);
    return d ? std::string_view(d, static_cast<std::size_t>(natsMsg_GetDataLength(m)))
             : std::string_view();
}

std::optional<std::string_view> StreamMessage::header(const char* key) const {
    const char* v = nullptr;
    if (!msg_ ||
        natsMsgHeader_Get(static_cast<natsMsg*>(const_cast<void*>(msg_)), key, &v) != NATS_OK || !v)
        return std::nullopt;
    return std::string_view(v);
}

#else  // no libnats: refused with one line

StreamReadResult read_stream(const StreamReadConfig&,
                             const std::function<void(const StreamMessage&)>&) {
    StreamReadResult r;
    r.status = StreamReadResult::Status::no_client;
    r.error = "--nats: this build has no NATS client (install libnats-dev and rebuild)";
    return r;
}

std::string_view StreamMessage::subject() const {
    return {};
}
std::string_view StreamMessage::data() const {
    return {};
}
std::optional<std::string_view> StreamMessage::header(const char*) const {
    return std::nullopt;
}

#endif

}  // namespace insert
