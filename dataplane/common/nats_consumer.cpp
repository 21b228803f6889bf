#include "dataplane/common/nats_consumer.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <utility>

#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/nats_library.hpp"

#ifdef INSERT_HAVE_NATS
#include <nats/nats.h>

#include "dataplane/common/nats_connect.hpp"
#endif

namespace insert {

std::string durable_consumer_name(std::string_view prefix, unsigned partition) {
    std::string name(prefix);
    name += "-correlate-p";
    name += std::to_string(partition);
    return name;
}

#ifdef INSERT_HAVE_NATS

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A fetch waits this long for messages: the longest a stopping run waits for its threads.
constexpr int64_t kFetchWaitMs = 500;
// Messages per fetch: up to 64 batches of 64 KiB (4 MiB).
constexpr int kFetchBatch = 64;
// The consumers' acknowledgement wait: a message fetched and not acknowledged within it is
// delivered again. The run acknowledges a message once its records are in the join, within
// milliseconds; a minute leaves room for a window that takes long.
constexpr int64_t kAckWaitNs = 60'000'000'000;
// Messages delivered and not acknowledged, per consumer, at most (the server's limit).
constexpr int64_t kMaxAckPending = 4096;
// Requests to JetStream's API (stream and consumer info, create).
constexpr int64_t kApiWaitMs = 2000;
// Pings: a bus that stops answering is noticed within ~3 of these.
constexpr int64_t kPingIntervalMs = 5000;

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

}  // namespace

struct NatsConsumer::Impl {
    explicit Impl(const NatsConsumerConfig& c) : config(c) {}

    // One owned partition: its consumer, its subscription and the thread that fetches.
    struct Part {
        unsigned k = 0;
        std::string subject;
        std::string durable;
        natsSubscription* sub = nullptr;
        bool ready = false;       // the stream and the consumer were found as they must be
        bool fresh = true;        // taken now: its consumer is made anew, from the start
        bool stop = false;        // given up (remove()): its thread ends
        bool said = false;        // "consuming partition K" was said
        uint64_t generation = 0;  // the connection's it was bound on
        std::thread thread;
    };

    void connect();
    void run(Part& p);
    bool bind(Part& p, uint64_t& pending, std::string& why);
    bool check_stream(std::string& why);
    bool ensure_consumer(Part& p, uint64_t& pending, std::string& why);
    void push(Part& p, natsMsgList& list);
    void said_problem(const std::string& why);
    void note_ready(Part& p, uint64_t pending);
    // Waits `d`, or until the run stops or the connection is made again; false once it stops.
    bool rest(const Part& p, Clock::duration d) {
        std::unique_lock lk(mu);
        stop_cv.wait_for(lk, d,
                         [&] { return stopping || p.stop || generation.load() != p.generation; });
        return !stopping && !p.stop;
    }
    bool ended(const Part& p) {
        std::lock_guard lk(mu);
        return stopping || p.stop;
    }
    void start_part(Part& p) {
        p.thread = std::thread([this, &p] { run(p); });
        const std::string name = "insert-bus-p" + std::to_string(p.k);
        pthread_setname_np(p.thread.native_handle(), name.substr(0, 15).c_str());
    }

    static void on_connected(natsConnection*, void* self);
    static void on_disconnected(natsConnection*, void* self);
    void came_back();
    void went_away();

    NatsConsumerConfig config;
    std::list<Part> parts;  // stable: each is its thread's
    int event_fd = -1;

    mutable std::mutex mu;
    std::condition_variable room_cv;  // the fetching threads wait for room
    std::condition_variable stop_cv;
    std::deque<BusMessage> queue;
    std::size_t queued_bytes = 0;
    bool stopping = false;
    Counts counts;
    std::string problem;  // the last problem said (said again only when it changes)
    bool away = false, ever_connected = false;
    Clock::time_point away_since{};

    std::atomic<bool> connected{false};
    // Connections made: a partition bound on an older one is looked at again (a new server
    // may not know the stream or the consumers: a restarted node without its store).
    std::atomic<uint64_t> generation{0};
    natsOptions* opts = nullptr;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
};

void NatsConsumer::Impl::on_connected(natsConnection*, void* self) {
    static_cast<Impl*>(self)->came_back();
}

void NatsConsumer::Impl::on_disconnected(natsConnection*, void* self) {
    static_cast<Impl*>(self)->went_away();
}

void NatsConsumer::Impl::came_back() {
    std::lock_guard lk(mu);
    connected.store(true);
    ++counts.connects;
    if (away)
        std::fprintf(stderr, "%s: %s the bus after %.1f s\n", config.label.c_str(),
                     ever_connected ? "back on" : "connected to",
                     seconds(Clock::now() - away_since));
    away = false;
    ever_connected = true;
    generation.fetch_add(1);
    stop_cv.notify_all();
}

void NatsConsumer::Impl::went_away() {
    std::lock_guard lk(mu);
    connected.store(false);
    if (away || stopping) return;
    away = true;
    away_since = Clock::now();
    std::fprintf(stderr,
                 "%s: lost the bus; reconnecting with backoff (0.1 s doubling to 2 s), the "
                 "join going on with what it has\n",
                 config.label.c_str());
}

void NatsConsumer::Impl::connect() {
    natsStatus s = nats_connect::client_options(&opts, config.servers, config.client, true,
                                                on_connected, on_disconnected, this);
    if (s == NATS_OK) s = natsOptions_SetPingInterval(opts, kPingIntervalMs);
    if (s != NATS_OK) {
        std::fprintf(stderr, "%s: cannot set up the client: %s\n", config.label.c_str(),
                     nats_connect::status_text(s).c_str());
        return;
    }
    s = natsConnection_Connect(&nc, opts);
    if (s == NATS_OK) {
        came_back();
    } else if (s == NATS_NOT_YET_CONNECTED) {
        std::lock_guard lk(mu);
        if (!ever_connected && !away) {
            away = true;
            away_since = Clock::now();
            std::fprintf(stderr,
                         "%s: cannot reach the bus (no server answered); waiting, trying again "
                         "with backoff (0.1 s doubling to 2 s)\n",
                         config.label.c_str());
        }
    } else {
        std::fprintf(stderr, "%s: cannot connect: %s\n", config.label.c_str(),
                     nats_connect::status_text(s).c_str());
        return;
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = kApiWaitMs;
    s = natsConnection_JetStream(&js, nc, &jo);
    if (s != NATS_OK)
        std::fprintf(stderr, "%s: no JetStream context: %s\n", config.label.c_str(),
                     nats_connect::status_text(s).c_str());
}

void NatsConsumer::Impl::said_problem(const std::string& why) {
    std::lock_guard lk(mu);
    if (why == problem || stopping) return;
    problem = why;
    std::fprintf(stderr, "%s: %s; looking again with backoff\n", config.label.c_str(), why.c_str());
}

// Said when a partition is bound the first time, from its first message; after a problem,
// once one binds again.
void NatsConsumer::Impl::note_ready(Part& p, uint64_t pending) {
    std::lock_guard lk(mu);
    if (p.said) {
        if (!problem.empty())
            std::fprintf(stderr, "%s: consuming again (partition %u: %llu messages waiting)\n",
                         config.label.c_str(), p.k, static_cast<unsigned long long>(pending));
        problem.clear();
        return;
    }
    p.said = true;
    std::fprintf(stderr,
                 "%s: consuming partition %u of stream %s from its first message (durable "
                 "consumer %s, %llu messages waiting)\n",
                 config.label.c_str(), p.k, config.prefix.c_str(), p.durable.c_str(),
                 static_cast<unsigned long long>(pending));
    problem.clear();
}

bool NatsConsumer::Impl::check_stream(std::string& why) {
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_GetStreamInfo(&si, js, config.prefix.c_str(), nullptr, &jerr);
    if (s == NATS_NOT_FOUND) {
        why = "stream " + config.prefix + ": not there yet (the first producer creates it)";
        return false;
    }
    if (s != NATS_OK) {
        why = "stream " + config.prefix + ": " + nats_connect::status_text(s, jerr);
        return false;
    }
    const jsStreamConfig* c = si->Config;
    bool covered = false;
    for (int i = 0; c && i < c->SubjectsLen; ++i)
        covered |= nats_client::subject_matches(c->Subjects[i],
                                                nats_client::partition_subject(config.prefix, 0));
    const unsigned theirs =
        nats_client::described_partitions(c && c->Description ? c->Description : "");
    jsStreamInfo_Destroy(si);
    if (!covered) {
        why = "stream " + config.prefix + ": refused: its subjects do not take " + config.prefix +
              ".part.*; nothing is consumed";
        return false;
    }
    // A stream made by hand names no count (0): taken as it is.
    if (theirs != 0 && theirs != config.partitions) {
        why = "stream " + config.prefix + ": refused: it was made for " + std::to_string(theirs) +
              " partitions, this correlator has --nats-partitions " +
              std::to_string(config.partitions) + "; nothing is consumed";
        return false;
    }
    return true;
}

// The partition's durable consumer, created when missing; one that exists is used as it is
// when it reads the partition's subject with explicit acknowledgements.
bool NatsConsumer::Impl::ensure_consumer(Part& p, uint64_t& pending, std::string& why) {
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    if (p.fresh) {
        // Taken now (at the start, or over from another instance): its join starts from the
        // partition's first message, so its consumer does too - made anew.
        if (p.sub) {
            natsSubscription_Destroy(p.sub);
            p.sub = nullptr;
        }
        const natsStatus d =
            js_DeleteConsumer(js, config.prefix.c_str(), p.durable.c_str(), nullptr, &jerr);
        if (d != NATS_OK && d != NATS_NOT_FOUND) {
            why = "consumer " + p.durable +
                  ": cannot make it anew: " + nats_connect::status_text(d, jerr);
            return false;
        }
        p.fresh = false;
        jerr = static_cast<jsErrCode>(0);
    }
    natsStatus s =
        js_GetConsumerInfo(&ci, js, config.prefix.c_str(), p.durable.c_str(), nullptr, &jerr);
    if (s == NATS_NOT_FOUND) {
        const std::string description =
            "insert-correlate: partition " + std::to_string(p.k) + " (docs/scale-out.md)";
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = p.durable.c_str();
        cc.Description = description.c_str();
        cc.FilterSubject = p.subject.c_str();
        cc.DeliverPolicy = js_DeliverAll;
        cc.AckPolicy = js_AckExplicit;
        cc.AckWait = kAckWaitNs;
        cc.MaxAckPending = kMaxAckPending;
        jerr = static_cast<jsErrCode>(0);
        s = js_AddConsumer(&ci, js, config.prefix.c_str(), &cc, nullptr, &jerr);
    }
    if (s != NATS_OK) {
        why = "consumer " + p.durable + ": " + nats_connect::status_text(s, jerr);
        return false;
    }
    const jsConsumerConfig* c = ci->Config;
    const bool fits = c && c->FilterSubject && p.subject == c->FilterSubject &&
                      c->AckPolicy == js_AckExplicit && !c->DeliverSubject;
    pending = ci->NumPending + static_cast<uint64_t>(std::max<int64_t>(ci->NumAckPending, 0));
    jsConsumerInfo_Destroy(ci);
    if (!fits) {
        why = "consumer " + p.durable + ": refused: it exists, but not as a pull consumer of " +
              p.subject + " with explicit acknowledgements (delete it, or choose another " +
              "--nats-subject)";
        return false;
    }
    return true;
}

bool NatsConsumer::Impl::bind(Part& p, uint64_t& pending, std::string& why) {
    if (!js || !connected.load()) return false;
    if (!check_stream(why) || !ensure_consumer(p, pending, why)) return false;
    if (p.sub) return true;  // kept across reconnections and recreated consumers
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = config.prefix.c_str();
    so.Consumer = p.durable.c_str();
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s =
        js_PullSubscribe(&p.sub, js, p.subject.c_str(), p.durable.c_str(), nullptr, &so, &jerr);
    if (s != NATS_OK) {
        p.sub = nullptr;
        why = "consumer " + p.durable + ": cannot subscribe: " + nats_connect::status_text(s, jerr);
        return false;
    }
    return true;
}

void NatsConsumer::Impl::push(Part& p, natsMsgList& list) {
    std::size_t bytes = 0;
    std::vector<BusMessage> got;
    for (int i = 0; i < list.Count; ++i) {
        natsMsg* m = list.Msgs[i];
        list.Msgs[i] = nullptr;  // ours now
        BusMessage bm;
        bm.msg_ = m;
        bm.partition_ = p.k;
        jsMsgMetaData* meta = nullptr;
        if (natsMsg_GetMetaData(&meta, m) == NATS_OK && meta) {
            bm.stream_seq_ = meta->Sequence.Stream;
            bm.delivered_ = meta->NumDelivered;
            jsMsgMetaData_Destroy(meta);
        }
        bytes += static_cast<std::size_t>(natsMsg_GetDataLength(m));
        got.push_back(std::move(bm));
    }
    natsMsgList_Destroy(&list);
    if (got.empty()) return;
    {
        std::lock_guard lk(mu);
        for (BusMessage& m : got) queue.push_back(std::move(m));
        queued_bytes += bytes;
        counts.fetched += got.size();
        counts.fetched_bytes += bytes;
    }
    const uint64_t one = 1;
    if (::write(event_fd, &one, sizeof one) < 0) {
        // The counter cannot overflow at one per fetch; nothing else can fail here.
    }
}

void NatsConsumer::Impl::run(Part& p) {
    int attempts = 0;
    for (;;) {
        {
            std::unique_lock lk(mu);
            // Room for another fetch: what waits is taken before more is fetched.
            room_cv.wait(lk, [this, &p] {
                return stopping || p.stop || queued_bytes < config.buffer_bytes;
            });
            if (stopping || p.stop) return;
        }
        if (const uint64_t g = generation.load(); g != p.generation) {
            p.generation = g;
            p.ready = false;
            attempts = 0;
        }
        if (!p.ready) {
            uint64_t pending = 0;
            std::string why;
            if (!bind(p, pending, why)) {
                // Not connected: woken when it is. Else said, and looked at again.
                if (!why.empty()) said_problem(why);
                const auto wait = std::chrono::milliseconds(
                    why.empty() ? nats_client::kMaxBackoffMs : nats_client::backoff_ms(++attempts));
                if (!rest(p, wait)) return;
                continue;
            }
            attempts = 0;
            p.ready = true;
            note_ready(p, pending);
        }
        natsMsgList list{};
        jsErrCode jerr = static_cast<jsErrCode>(0);
        const natsStatus s = natsSubscription_Fetch(&list, p.sub, kFetchBatch, kFetchWaitMs, &jerr);
        if (s == NATS_OK) {
            if (ended(p)) {
                natsMsgList_Destroy(&list);
                return;
            }
            push(p, list);
            continue;
        }
        natsMsgList_Destroy(&list);
        if (s == NATS_TIMEOUT) continue;  // nothing new (or the bus away: reconnecting)
        // The consumer or the stream gone (a server restarted without its store), or the
        // connection closing: both looked at again before the next fetch.
        if (connected.load())
            said_problem("partition " + std::to_string(p.k) +
                         ": fetch failed: " + nats_connect::status_text(s, jerr));
        p.ready = false;
        if (!rest(p, std::chrono::milliseconds(nats_client::backoff_ms(++attempts)))) return;
    }
}

std::unique_ptr<NatsConsumer> NatsConsumer::create(const NatsConsumerConfig& config,
                                                   std::string& error) {
    if (!nats_client::valid_prefix(config.prefix)) {
        error = "--nats-subject " + config.prefix +
                ": one subject token (letters, digits, '_' and '-') - it also names the stream";
        return nullptr;
    }
    if (config.servers.empty()) {
        error = "--nats: no server";
        return nullptr;
    }
    for (const std::string& u : config.servers)
        if (!u.starts_with("nats://") || u.size() <= 7) {
            error = "--nats " + u + ": expected nats://HOST:PORT";
            return nullptr;
        }
    for (unsigned k : config.owned)
        if (k >= config.partitions) {
            error = "--partitions: " + std::to_string(k) + " is not below --nats-partitions " +
                    std::to_string(config.partitions);
            return nullptr;
        }
    auto impl = std::make_unique<Impl>(config);
    impl->event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (impl->event_fd < 0) {
        error = "eventfd failed";
        return nullptr;
    }
    return std::unique_ptr<NatsConsumer>(new NatsConsumer(std::move(impl)));
}

NatsConsumer::NatsConsumer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
    nats_library::hold();
}

NatsConsumer::~NatsConsumer() {
    stop();
    Impl& m = *impl_;
    // Messages before their subscriptions, subscriptions before the context and the
    // connection; then the library's threads are waited for, so that no callback runs
    // into this object once it is gone.
    m.queue.clear();
    for (Impl::Part& p : m.parts)
        if (p.sub) natsSubscription_Destroy(p.sub);  // the durable consumer stays
    if (m.js) jsCtx_Destroy(m.js);
    if (m.nc) natsConnection_Destroy(m.nc);
    if (m.opts) natsOptions_Destroy(m.opts);
    if (m.event_fd >= 0) ::close(m.event_fd);
    m.js = nullptr;
    m.nc = nullptr;
    m.opts = nullptr;
    // Freed once the library's threads are done (nats_library.hpp).
    nats_library::release([impl = std::shared_ptr<Impl>(std::move(impl_))] {});
}

void NatsConsumer::start() {
    impl_->connect();
    for (unsigned k : impl_->config.owned) add(k);
}

void NatsConsumer::add(unsigned k) {
    Impl& m = *impl_;
    for (const Impl::Part& p : m.parts)
        if (p.k == k) return;
    Impl::Part& p = m.parts.emplace_back();
    p.k = k;
    p.subject = nats_client::partition_subject(m.config.prefix, k);
    p.durable = durable_consumer_name(m.config.prefix, k);
    m.start_part(p);
}

void NatsConsumer::remove(unsigned k) {
    Impl& m = *impl_;
    const auto it =
        std::find_if(m.parts.begin(), m.parts.end(), [k](const Impl::Part& p) { return p.k == k; });
    if (it == m.parts.end()) return;
    {
        std::lock_guard lk(m.mu);
        it->stop = true;
    }
    m.stop_cv.notify_all();
    m.room_cv.notify_all();
    if (it->thread.joinable()) it->thread.join();
    if (it->sub) natsSubscription_Destroy(it->sub);
    m.parts.erase(it);
    // What it fetched and nobody took: dropped (the next owner reads from the start).
    std::lock_guard lk(m.mu);
    std::erase_if(m.queue, [&m, k](const BusMessage& msg) {
        if (msg.partition() != k) return false;
        m.queued_bytes -= std::min(m.queued_bytes, msg.data().size());
        return true;
    });
}

int NatsConsumer::fd() const {
    return impl_->event_fd;
}

void NatsConsumer::take(std::vector<BusMessage>& out) {
    Impl& m = *impl_;
    uint64_t ignored = 0;
    if (::read(m.event_fd, &ignored, sizeof ignored) < 0) {
        // EAGAIN: nothing was signalled since the last take; the queue says what waits.
    }
    {
        std::lock_guard lk(m.mu);
        for (BusMessage& msg : m.queue) {
            m.queued_bytes -= std::min(m.queued_bytes, msg.data().size());
            out.push_back(std::move(msg));
        }
        m.queue.clear();
    }
    m.room_cv.notify_all();
}

void NatsConsumer::ack(BusMessage& message) {
    if (!message.msg_) return;
    if (natsMsg_Ack(static_cast<natsMsg*>(message.msg_), nullptr) == NATS_OK) {
        std::lock_guard lk(impl_->mu);
        ++impl_->counts.acked;
    }
    message = BusMessage();
}

void NatsConsumer::stop() {
    Impl& m = *impl_;
    {
        std::lock_guard lk(m.mu);
        m.stopping = true;
    }
    m.room_cv.notify_all();
    m.stop_cv.notify_all();
    for (Impl::Part& p : m.parts)
        if (p.thread.joinable()) p.thread.join();
    std::lock_guard lk(m.mu);
    // Handed back (negative acknowledgements): the next process that binds the consumers
    // gets them at once, in order, rather than after the acknowledgement wait.
    for (BusMessage& msg : m.queue) natsMsg_Nak(static_cast<natsMsg*>(msg.msg_), nullptr);
    m.queue.clear();
    m.queued_bytes = 0;
}

NatsConsumer::Counts NatsConsumer::counts() const {
    std::lock_guard lk(impl_->mu);
    return impl_->counts;
}

BusMessage::~BusMessage() {
    if (msg_) natsMsg_Destroy(static_cast<natsMsg*>(msg_));
}

BusMessage::BusMessage(BusMessage&& o) noexcept
    : msg_(std::exchange(o.msg_, nullptr)),
      partition_(o.partition_),
      stream_seq_(o.stream_seq_),
      delivered_(o.delivered_) {}

BusMessage& BusMessage::operator=(BusMessage&& o) noexcept {
    if (this != &o) {
        if (msg_) natsMsg_Destroy(static_cast<natsMsg*>(msg_));
        msg_ = std::exchange(o.msg_, nullptr);
        partition_ = o.partition_;
        stream_seq_ = o.stream_seq_;
        delivered_ = o.delivered_;
    }
    return *this;
}

std::string_view BusMessage::subject() const {
    const char* s = msg_ ? natsMsg_GetSubject(static_cast<natsMsg*>(msg_)) : nullptr;
    return s ? std::string_view(s) : std::string_view();
}

std::string_view BusMessage::data() const {
    if (!msg_) return {};
    const auto* m = static_cast<natsMsg*>(msg_);
    const char* d = natsMsg_GetData(m);
    return d ? std::string_view(d, static_cast<std::size_t>(natsMsg_GetDataLength(m)))
             : std::string_view();
}

std::optional<std::string_view> BusMessage::header(const char* key) const {
    const char* v = nullptr;
    if (!msg_ || natsMsgHeader_Get(static_cast<natsMsg*>(msg_), key, &v) != NATS_OK || !v)
        return std::nullopt;
    return std::string_view(v);
}

#else  // no libnats: --nats is refused with one line

struct NatsConsumer::Impl {};

std::unique_ptr<NatsConsumer> NatsConsumer::create(const NatsConsumerConfig&, std::string& error) {
    error = "--nats: this build has no NATS client (install libnats-dev and rebuild)";
    return nullptr;
}

NatsConsumer::NatsConsumer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NatsConsumer::~NatsConsumer() = default;
void NatsConsumer::start() {}
void NatsConsumer::add(unsigned) {}
void NatsConsumer::remove(unsigned) {}
int NatsConsumer::fd() const {
    return -1;
}
void NatsConsumer::take(std::vector<BusMessage>&) {}
void NatsConsumer::ack(BusMessage&) {}
void NatsConsumer::stop() {}
NatsConsumer::Counts NatsConsumer::counts() const {
    return {};
}
BusMessage::~BusMessage() = default;
BusMessage::BusMessage(BusMessage&&) noexcept = default;
BusMessage& BusMessage::operator=(BusMessage&&) noexcept = default;
std::string_view BusMessage::subject() const {
    return {};
}
std::string_view BusMessage::data() const {
    return {};
}
std::optional<std::string_view> BusMessage::header(const char*) const {
    return std::nullopt;
}

#endif

}  // namespace insert
