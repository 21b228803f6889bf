#include "dataplane/common/nats_publisher.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/nats_library.hpp"
#include "dataplane/common/record_batcher.hpp"
#include "dataplane/common/version.hpp"

#ifdef INSERT_HAVE_NATS
#include <nats/nats.h>

#include "dataplane/common/nats_connect.hpp"
#endif

namespace insert {

namespace {

using namespace std::chrono_literals;

// A batch is sealed at this size (JSON Lines: ~200 insert-dp records, ~150 verb records) -
// a tenth of the server's default max_payload (1 MiB), big enough that the per-message
// cost (headers, acknowledgement) is a few per cent of the bytes.
constexpr std::size_t kBatchBytes = 64 << 10;
// ... or once its first record is this old: a quiet producer's records reach the bus within
// it (the correlator waits --max-delay, 1 s, for a producer).
constexpr auto kLinger = std::chrono::duration_cast<NatsPublisher::Clock::duration>(100ms);

double seconds(NatsPublisher::Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

}  // namespace

std::string default_producer_identity(std::string_view program, std::string_view host) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    char name[256] = {};
    if (host.empty() && ::gethostname(name, sizeof(name) - 1) == 0) host = name;
    std::string id(program);
    id += '.';
    id += host.empty() ? std::string_view("unknown") : host;
    id += '.';
    id += std::to_string(::getpid());
    id += '.';
    id += std::to_string(ms);
    return id;
}

#ifdef INSERT_HAVE_NATS

namespace {

// Batches published and not yet acknowledged, at most: 8 MiB on the wire at once, which
// keeps a 10 Gb/s link to the bus busy across a 5 ms round trip.
constexpr uint64_t kMaxInFlight = 128;
// The end's wait for acknowledgements while the bus is away or refuses the stream (the
// whole wait, finish()'s, while it is there).
constexpr auto kAwayFinish = std::chrono::seconds(5);
// An acknowledgement that has not come after this is a failure: the batch is published
// again (same message id: the stream keeps it once, within its duplicate window).
constexpr int64_t kAckWaitMs = 2000;
// The stream's duplicate window: a batch published again within it is stored once.
constexpr int64_t kDuplicateWindowNs = 120'000'000'000;
// Reconnection (the client library's) and the stream's look-ups: 0.1 s doubling to 2 s.
using nats_client::kFirstBackoffMs;
using nats_client::kMaxBackoffMs;
// Requests to JetStream's API (stream info, create): they run on the publisher's thread.
constexpr int64_t kApiWaitMs = 2000;
// Pings: a bus that stops answering is noticed within ~3 of these.
constexpr int64_t kPingIntervalMs = 5000;
uint64_t header_number(natsMsg* m, const char* key) {
    const char* v = nullptr;
    if (natsMsgHeader_Get(m, key, &v) != NATS_OK || !v) return 0;
    return std::strtoull(v, nullptr, 10);
}

}  // namespace

struct NatsPublisher::Impl final : BatchSink {
    explicit Impl(const NatsConfig& c, HostMap map)
        : config(c),
          hosts(std::move(map)),
          batcher(HostPartitions(c.partitions, hosts.size() ? &hosts : nullptr), kBatchBytes,
                  kLinger) {}

    // One sealed batch, before it was published (body) or after a failed acknowledgement
    // (msg, ours again).
    struct Item {
        uint32_t partition = 0;
        uint64_t seq = 0;
        uint32_t records = 0;
        std::size_t bytes = 0;
        std::string body;
        natsMsg* msg = nullptr;
        bool sent = false;  // published before: its acknowledgement failed
    };

    // BatchSink, on the producer's thread.
    bool room(std::size_t bytes, std::size_t open_bytes) override {
        if (open_bytes + held.load(std::memory_order_relaxed) + bytes <= config.buffer_bytes)
            return true;
        dropped.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    void sealed(RecordBatch&& b) override {
        Item item;
        item.partition = b.partition;
        item.seq = b.seq;
        item.records = b.records;
        item.bytes = b.body.size();
        item.body = std::move(b.body);
        held.fetch_add(item.bytes, std::memory_order_relaxed);
        {
            std::lock_guard lk(mu);
            queue.push_back(std::move(item));
        }
        work_cv.notify_one();
    }

    int replicas_to_make();
    void write(std::string_view bytes);
    void wait_for_room(std::size_t bytes);
    void run();
    void connect();
    bool ensure_stream();
    bool check_stream(const jsStreamInfo* si, std::string& why) const;
    void publish_some(std::unique_lock<std::mutex>& lk);
    bool build(Item& item);
    void close();

    // Callbacks, on the client library's threads.
    static void on_ack(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* self);
    static void on_connected(natsConnection*, void* self);
    static void on_disconnected(natsConnection*, void* self);
    static void on_closed(natsConnection*, void* self);
    void acked(natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae);
    void came_back();
    void went_away();

    NatsConfig config;
    HostMap hosts;
    RecordBatcher batcher;  // the producer's thread only

    std::mutex mu;
    std::condition_variable work_cv;  // the publisher's thread waits on it
    std::condition_variable room_cv;  // a producer waiting for room (wait_when_full)
    std::deque<Item> queue;           // sealed, never published
    std::deque<Item> retry;           // acknowledgement failed: published again first
    uint64_t in_flight = 0, in_flight_records = 0;
    uint64_t acked_batches = 0, acked_records = 0, republished = 0, duplicates = 0;
    uint64_t connects = 0;
    bool stream_ready = false;
    // The stream cannot take our records until someone changes it (its subjects, its
    // partition count) or the bus has no JetStream: replay stops waiting for room. Anything
    // else - a stream being made, its leader being elected - is waited for.
    bool stream_refused = false;
    bool stream_said = false;    // the stream's line was said
    std::string stream_problem;  // the last stream failure said (said again only when new)
    std::string said_refusal;    // the last reason the stream refused a batch, said
    int64_t stream_backoff_ms = kFirstBackoffMs;
    Clock::time_point next_stream_try{};
    bool stopping = false;
    Clock::time_point deadline{};
    Clock::time_point away_deadline{};  // the end's wait while the bus is away
    bool said_oversize = false;
    bool said_timeout = false;
    // The bus away: since when, the drops when it went, and whether it was said.
    bool away = false;
    bool ever_connected = false;
    Clock::time_point away_since{};
    uint64_t dropped_when_away = 0;

    std::atomic<std::size_t> held{0};  // bytes of queue, retry and the batches in flight
    std::atomic<uint64_t> dropped{0};  // partition records dropped
    std::atomic<bool> connected{false};
    std::vector<unsigned> cpus;
    std::thread thread;
    natsOptions* opts = nullptr;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    bool closed = false;
};

void NatsPublisher::Impl::on_ack(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* self) {
    static_cast<Impl*>(self)->acked(msg, pa, pae);
}

void NatsPublisher::Impl::acked(natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae) {
    const uint64_t records = header_number(msg, "Insert-Records");
    const std::size_t bytes = static_cast<std::size_t>(natsMsg_GetDataLength(msg));
    {
        std::lock_guard lk(mu);
        if (closed) {  // finish() counted it as undelivered
            natsMsg_Destroy(msg);
            return;
        }
        --in_flight;
        in_flight_records -= records;
        if (pa) {
            ++acked_batches;
            acked_records += records;
            if (pa->Duplicate) ++duplicates;
            held.fetch_sub(bytes, std::memory_order_relaxed);
            natsMsg_Destroy(msg);
        } else {
            Item item;
            item.partition = static_cast<uint32_t>(header_number(msg, "Insert-Partition"));
            item.seq = header_number(msg, "Insert-Seq");
            item.records = static_cast<uint32_t>(records);
            item.bytes = bytes;
            item.msg = msg;
            item.sent = true;
            // In the order they were published: failures come back in that order.
            retry.push_back(std::move(item));
            if (pae && pae->Err == NATS_TIMEOUT && !said_timeout) {
                std::fprintf(stderr,
                             "%s: a batch was not acknowledged within %.0f s: publishing it "
                             "again (the stream keeps one copy); said once\n",
                             config.label.c_str(), kAckWaitMs / 1000.0);
                said_timeout = true;
            }
            // A timeout is the bus slow or away; anything else is about the stream (gone,
            // full, no leader): looked at again before publishing more.
            if (pae && pae->Err != NATS_TIMEOUT && stream_ready) {
                stream_ready = false;
                const std::string why = pae->ErrText && *pae->ErrText
                                            ? std::string(pae->ErrText)
                                            : std::string(natsStatus_GetText(pae->Err));
                // Said once per reason: a stream whose leader is being elected refuses
                // every batch (no responders) for a second or more, the look at it
                // succeeding in between.
                if (why != said_refusal) {
                    std::fprintf(stderr,
                                 "%s: the stream %s refused a batch (%s); looking at it again\n",
                                 config.label.c_str(), config.prefix.c_str(), why.c_str());
                    stream_problem = why;
                    said_refusal = why;
                }
                stream_backoff_ms = kFirstBackoffMs;
                next_stream_try = Clock::now();
            }
        }
    }
    work_cv.notify_one();
    room_cv.notify_all();
}

void NatsPublisher::Impl::on_connected(natsConnection*, void* self) {
    static_cast<Impl*>(self)->came_back();
}

void NatsPublisher::Impl::on_disconnected(natsConnection*, void* self) {
    static_cast<Impl*>(self)->went_away();
}

void NatsPublisher::Impl::on_closed(natsConnection*, void* self) {
    static_cast<Impl*>(self)->connected.store(false);
}

void NatsPublisher::Impl::came_back() {
    {
        std::lock_guard lk(mu);
        connected.store(true);
        ++connects;
        const auto now = Clock::now();
        if (away) {
            const uint64_t d = dropped.load();
            std::fprintf(stderr,
                         "%s: %s the bus after %.1f s (%llu records dropped meanwhile, %llu in "
                         "all)\n",
                         config.label.c_str(), ever_connected ? "back on" : "connected to",
                         seconds(now - away_since),
                         static_cast<unsigned long long>(d - dropped_when_away),
                         static_cast<unsigned long long>(d));
            away = false;
        }
        ever_connected = true;
        // A new server may not know the stream (a new cluster, a restarted single node
        // without its store): looked at again.
        stream_ready = false;
        stream_backoff_ms = kFirstBackoffMs;
        next_stream_try = now;
    }
    work_cv.notify_one();
}

void NatsPublisher::Impl::went_away() {
    std::lock_guard lk(mu);
    connected.store(false);
    // Said while finish() waits too (the bus can go then: a replay's records are all
    // written in a moment, then acknowledged); only our own close() is no news.
    if (away || closed) return;
    away = true;
    away_since = Clock::now();
    dropped_when_away = dropped.load();
    std::fprintf(stderr,
                 "%s: lost the bus; reconnecting with backoff (0.1 s doubling to 2 s), keeping "
                 "up to %zu bytes of records meanwhile (the other outputs go on)\n",
                 config.label.c_str(), config.buffer_bytes);
}

void NatsPublisher::Impl::connect() {
    natsStatus s = nats_connect::client_options(&opts, config.servers, config.producer, true,
                                                on_connected, on_disconnected, this);
    if (s == NATS_OK) s = natsOptions_SetClosedCB(opts, on_closed, this);
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
            dropped_when_away = dropped.load();
            std::fprintf(stderr,
                         "%s: cannot reach the bus (no server answered); trying again with "
                         "backoff (0.1 s doubling to 2 s), keeping up to %zu bytes of records "
                         "meanwhile (the other outputs go on)\n",
                         config.label.c_str(), config.buffer_bytes);
        }
    } else {
        std::fprintf(stderr, "%s: cannot connect: %s\n", config.label.c_str(),
                     nats_connect::status_text(s).c_str());
        return;
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = kApiWaitMs;
    jo.PublishAsync.AckHandler = on_ack;
    jo.PublishAsync.AckHandlerClosure = this;
    s = natsConnection_JetStream(&js, nc, &jo);
    if (s != NATS_OK)
        std::fprintf(stderr, "%s: no JetStream context: %s\n", config.label.c_str(),
                     nats_connect::status_text(s).c_str());
}

bool NatsPublisher::Impl::check_stream(const jsStreamInfo* si, std::string& why) const {
    const jsStreamConfig* c = si->Config;
    const std::string probe = nats_client::partition_subject(config.prefix, 0);
    bool covered = false;
    for (int i = 0; c && i < c->SubjectsLen; ++i)
        covered |= nats_client::subject_matches(c->Subjects[i], probe);
    if (!covered) {
        why = "its subjects do not take " + config.prefix + ".part.*";
        return false;
    }
    // A stream made by hand names no count (0): taken as it is.
    const unsigned theirs =
        nats_client::described_partitions(c && c->Description ? c->Description : "");
    if (theirs != 0 && theirs != config.partitions) {
        why = "it was made for " + std::to_string(theirs) +
              " partitions, this producer has --nats-partitions " +
              std::to_string(config.partitions);
        return false;
    }
    return true;
}

bool NatsPublisher::Impl::ensure_stream() {
    uint64_t connects_before;
    {
        std::lock_guard lk(mu);
        connects_before = connects;
    }
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&si, js, config.prefix.c_str(), nullptr, &jerr);
    bool created = false;
    if (s == NATS_NOT_FOUND) {
        const std::string subject = config.prefix + ".part.*";
        const char* subjects[] = {subject.c_str()};
        const std::string description = nats_client::stream_description(config.partitions);
        jsStreamConfig cfg;
        jsStreamConfig_Init(&cfg);
        cfg.Name = config.prefix.c_str();
        cfg.Description = description.c_str();
        cfg.Subjects = subjects;
        cfg.SubjectsLen = 1;
        cfg.Storage = js_FileStorage;
        cfg.Replicas = replicas_to_make();
        cfg.Duplicates = kDuplicateWindowNs;
        jerr = static_cast<jsErrCode>(0);
        s = js_AddStream(&si, js, &cfg, nullptr, &jerr);
        created = s == NATS_OK;
        if (s != NATS_OK && jerr == JSStreamNameExistErr)  // another producer was first
            s = js_GetStreamInfo(&si, js, config.prefix.c_str(), nullptr, &jerr);
    }
    std::string why;
    const bool refused = s == NATS_NO_RESPONDERS || (s == NATS_OK && !check_stream(si, why));
    if (s != NATS_OK) {
        why = nats_connect::status_text(s);
        if (jerr) why += " (JetStream error " + std::to_string(static_cast<int>(jerr)) + ")";
    } else if (refused) {
        why = "refused: " + why + "; nothing is published (records dropped and counted)";
    }
    std::lock_guard lk(mu);
    stream_refused = refused;
    if (!why.empty()) {
        if (why != stream_problem)
            std::fprintf(stderr, "%s: stream %s: %s; looking again with backoff\n",
                         config.label.c_str(), config.prefix.c_str(), why.c_str());
        stream_problem = why;
        // A request the lost connection took with it is asked again as soon as it is back.
        const bool reconnected = connects != connects_before;
        next_stream_try = reconnected ? Clock::now()
                                      : Clock::now() + std::chrono::milliseconds(stream_backoff_ms);
        if (!reconnected) stream_backoff_ms = std::min(stream_backoff_ms * 2, kMaxBackoffMs);
        if (si) jsStreamInfo_Destroy(si);
        return false;
    }
    if (!stream_said || !stream_problem.empty()) {
        const jsStreamConfig* c = si->Config;
        std::fprintf(stderr,
                     "%s: publishing to stream %s (%s, subjects %s.part.0-%u, %s storage, %lld "
                     "replica%s)\n",
                     config.label.c_str(), config.prefix.c_str(), created ? "created" : "existing",
                     config.prefix.c_str(), config.partitions - 1,
                     c->Storage == js_FileStorage ? "file" : "memory",
                     static_cast<long long>(c->Replicas), c->Replicas == 1 ? "" : "s");
        stream_said = true;
    }
    stream_problem.clear();
    stream_backoff_ms = kFirstBackoffMs;
    jsStreamInfo_Destroy(si);
    return true;
}

bool NatsPublisher::Impl::build(Item& item) {
    const std::string subject = nats_client::partition_subject(config.prefix, item.partition);
    natsStatus s = natsMsg_Create(&item.msg, subject.c_str(), nullptr, item.body.data(),
                                  static_cast<int>(item.body.size()));
    const std::string seq = std::to_string(item.seq);
    const std::string partition = std::to_string(item.partition);
    const std::string id = config.producer + ":" + partition + ":" + seq;
    const std::string partitions = std::to_string(config.partitions);
    const std::string records = std::to_string(item.records);
    const std::string schema(kRecordSchema);
    const std::pair<const char*, const std::string*> headers[] = {
        {"Nats-Msg-Id", &id},
        {"Insert-Producer", &config.producer},
        {"Insert-Partition", &partition},
        {"Insert-Partitions", &partitions},
        {"Insert-Seq", &seq},
        {"Insert-Records", &records},
        {"Insert-Schema", &schema},
    };
    for (const auto& [key, value] : headers)
        if (s == NATS_OK) s = natsMsgHeader_Set(item.msg, key, value->c_str());
    if (s != NATS_OK) {
        natsMsg_Destroy(item.msg);
        item.msg = nullptr;
        return false;
    }
    item.body = std::string();  // the message holds its copy
    return true;
}

// Under `lk`; publishes while there is room in flight and the bus and stream are there.
void NatsPublisher::Impl::publish_some(std::unique_lock<std::mutex>& lk) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = kAckWaitMs;
    while (in_flight < kMaxInFlight && connected.load() && stream_ready &&
           (!retry.empty() || !queue.empty())) {
        std::deque<Item>& from = retry.empty() ? queue : retry;
        Item item = std::move(from.front());
        from.pop_front();
        const bool again = item.sent;
        // Counted in flight before it is: its acknowledgement may come before the call returns.
        ++in_flight;
        in_flight_records += item.records;
        lk.unlock();
        natsStatus s = NATS_NO_MEMORY;
        if (item.msg || build(item)) {
            natsMsg* m = item.msg;
            s = js_PublishMsgAsync(js, &m, &po);
            if (s == NATS_OK) item.msg = nullptr;  // the library's now
        }
        lk.lock();
        if (s == NATS_OK) {
            if (again) ++republished;
            continue;
        }
        --in_flight;
        in_flight_records -= item.records;
        if (s == NATS_MAX_PAYLOAD) {  // never fits: dropped (a single record over the limit)
            dropped.fetch_add(item.records, std::memory_order_relaxed);
            held.fetch_sub(item.bytes, std::memory_order_relaxed);
            if (!said_oversize)
                std::fprintf(stderr,
                             "%s: a batch of %zu bytes is over the bus's max_payload: "
                             "dropped (and counted)\n",
                             config.label.c_str(), item.bytes);
            said_oversize = true;
            natsMsg_Destroy(item.msg);
            continue;
        }
        // Not sent (the connection went, its reconnect buffer is full): first again, later.
        retry.push_front(std::move(item));
        break;
    }
}

void NatsPublisher::Impl::run() {
    if (!cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (unsigned c : cpus) CPU_SET(c, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    connect();
    std::unique_lock lk(mu);
    for (;;) {
        const auto now = Clock::now();
        const bool empty = queue.empty() && retry.empty() && in_flight == 0;
        // At the end: the whole wait while the bus is there (a leader election stalls the
        // acknowledgements for seconds), at most kAwayFinish while it is away or refuses.
        const bool reachable =
            connected.load() && stream_problem.find("refused") == std::string::npos;
        if (stopping && (empty || now >= deadline || (!reachable && now >= away_deadline))) break;
        if (js && connected.load() && !stream_ready && now >= next_stream_try) {
            lk.unlock();
            const bool ok = ensure_stream();
            lk.lock();
            stream_ready = ok && connected.load();
            if (stream_ready) room_cv.notify_all();
        }
        if (js) publish_some(lk);
        auto until = now + 100ms;
        if (stopping) until = std::min(until, deadline);
        if (!stream_ready && next_stream_try > now) until = std::min(until, next_stream_try);
        work_cv.wait_until(lk, until);
    }
}

// The replicas of a stream this publisher makes: its configuration's, or (0) those of the
// stream `replicas_of` (the correlator's output follows its input), 1 when that is not there.
int NatsPublisher::Impl::replicas_to_make() {
    if (config.replicas > 0 || config.replicas_of.empty()) return std::max(1u, config.replicas);
    jsStreamInfo* other = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    int replicas = 1;
    if (js_GetStreamInfo(&other, js, config.replicas_of.c_str(), nullptr, &jerr) == NATS_OK) {
        if (other->Config) replicas = std::max<int64_t>(1, other->Config->Replicas);
        jsStreamInfo_Destroy(other);
    }
    return replicas;
}

void NatsPublisher::Impl::wait_for_room(std::size_t bytes) {
    if (batcher.open_bytes() + held.load() + bytes <= config.buffer_bytes) return;
    batcher.seal_all(*this);  // what is open can only make room once it is sealed
    std::unique_lock lk(mu);
    while (held.load() + bytes > config.buffer_bytes && connected.load() && !stream_refused &&
           !stopping)
        room_cv.wait_for(lk, 50ms);
}

void NatsPublisher::Impl::write(std::string_view bytes) {
    if (!config.wait_when_full) {
        batcher.write(bytes, Clock::now(), *this);
        return;
    }
    // Piece by piece, each with room for its copies: a record may go to every partition,
    // and a line cut at the previous piece's end completes in this one (twice the piece).
    // Less room than that would drop copies while the bus is reachable and behind.
    while (!bytes.empty()) {
        const std::string_view piece = bytes.substr(0, kBatchBytes);
        wait_for_room(std::min(2 * piece.size() * config.partitions, config.buffer_bytes / 2));
        batcher.write(piece, Clock::now(), *this);
        bytes.remove_prefix(piece.size());
    }
}

void NatsPublisher::Impl::close() {
    {
        std::lock_guard lk(mu);
        if (closed) return;
        closed = true;
    }
    // The context, then the connection; the library's threads are waited for when the
    // process's last client lets go of it (nats_library.hpp: the destructor hands this
    // object over until then, so that no callback runs into it once it is gone).
    if (js) jsCtx_Destroy(js);
    if (nc) natsConnection_Destroy(nc);
    if (opts) natsOptions_Destroy(opts);
    js = nullptr;
    nc = nullptr;
    opts = nullptr;
    std::lock_guard lk(mu);
    for (std::deque<Item>* q : {&queue, &retry})
        for (Item& item : *q) natsMsg_Destroy(item.msg);
    queue.clear();
    retry.clear();
}

bool nats_available() {
    return true;
}

std::unique_ptr<NatsPublisher> NatsPublisher::create(const NatsConfig& config, std::string& error) {
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
    if (config.partitions < 1) {
        error = "--nats-partitions: at least 1";
        return nullptr;
    }
    HostMap hosts;
    if (!config.hosts_file.empty() && !hosts.load(config.hosts_file, error)) {
        error = "--nats-hosts " + error;
        return nullptr;
    }
    return std::unique_ptr<NatsPublisher>(
        new NatsPublisher(std::make_unique<Impl>(config, std::move(hosts))));
}

NatsPublisher::NatsPublisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
    nats_library::hold();
}

NatsPublisher::~NatsPublisher() {
    if (impl_->thread.joinable()) finish(Clock::duration::zero());
    impl_->close();
    nats_library::release([impl = std::shared_ptr<Impl>(std::move(impl_))] {});
}

void NatsPublisher::start(const std::vector<unsigned>& cpus) {
    impl_->cpus = cpus;
    impl_->thread = std::thread([this] { impl_->run(); });
    pthread_setname_np(impl_->thread.native_handle(), "insert-nats");
}

void NatsPublisher::write(std::string_view bytes) {
    impl_->write(bytes);
}

void NatsPublisher::write_to(unsigned k, std::string_view line) {
    if (k < impl_->config.partitions) impl_->batcher.write_to(k, line, Clock::now(), *impl_);
}

void NatsPublisher::seal() {
    impl_->batcher.seal_all(*impl_);
    impl_->work_cv.notify_one();
}

bool NatsPublisher::settled() const {
    Impl& m = *impl_;
    if (m.batcher.open_bytes() > 0) return false;
    std::lock_guard lk(m.mu);
    return m.in_flight == 0 && m.queue.empty() && m.retry.empty();
}

void NatsPublisher::pump() {
    impl_->batcher.seal_aged(Clock::now(), *impl_);
}

bool NatsPublisher::finish(Clock::duration wait) {
    Impl& m = *impl_;
    m.batcher.seal_all(m, true);
    {
        std::lock_guard lk(m.mu);
        m.stopping = true;
        m.deadline = Clock::now() + wait;
        m.away_deadline = Clock::now() + std::min<Clock::duration>(wait, kAwayFinish);
    }
    m.work_cv.notify_one();
    m.room_cv.notify_all();
    if (m.thread.joinable()) m.thread.join();
    const bool was_connected = m.connected.load();
    uint64_t undelivered = 0;
    {
        std::lock_guard lk(m.mu);
        undelivered = m.in_flight_records;
        for (const std::deque<Impl::Item>* q : {&m.queue, &m.retry})
            for (const Impl::Item& item : *q) undelivered += item.records;
        m.in_flight = m.in_flight_records = 0;
    }
    m.close();  // from here on no acknowledgement counts: what is not acknowledged is lost
    m.dropped.fetch_add(undelivered);
    if (undelivered > 0)
        std::fprintf(stderr, "%s: %llu records not delivered at the end (%s)\n",
                     m.config.label.c_str(), static_cast<unsigned long long>(undelivered),
                     !was_connected    ? "the bus was away"
                     : !m.stream_ready ? ("the stream was not ready: " + m.stream_problem).c_str()
                                       : "the bus did not acknowledge them in time");
    const Counts c = counts();
    std::fprintf(
        stderr,
        "%s: %llu records in %llu batches acknowledged by the bus (%llu published "
        "again, %llu of them duplicates the stream had), %llu dropped, %llu "
        "connection%s\n",
        m.config.label.c_str(), static_cast<unsigned long long>(c.acked_records),
        static_cast<unsigned long long>(c.acked), static_cast<unsigned long long>(c.republished),
        static_cast<unsigned long long>(c.duplicates), static_cast<unsigned long long>(c.dropped),
        static_cast<unsigned long long>(c.connects), c.connects == 1 ? "" : "s");
    return undelivered == 0 && c.dropped == 0;
}

NatsPublisher::Counts NatsPublisher::counts() const {
    Impl& m = *impl_;
    const RecordBatcher::Counts b = m.batcher.counts();
    std::lock_guard lk(m.mu);
    Counts c;
    c.records = b.records;
    c.batches = b.batches;
    c.acked = m.acked_batches;
    c.acked_records = m.acked_records;
    c.republished = m.republished;
    c.duplicates = m.duplicates;
    c.dropped = m.dropped.load();
    c.connects = m.connects;
    return c;
}

const NatsConfig& NatsPublisher::config() const {
    return impl_->config;
}

#else  // no libnats: the option is refused with one line

struct NatsPublisher::Impl {
    NatsConfig config;
};

bool nats_available() {
    return false;
}

std::unique_ptr<NatsPublisher> NatsPublisher::create(const NatsConfig&, std::string& error) {
    error = "--nats: this build has no NATS client (install libnats-dev and rebuild)";
    return nullptr;
}

NatsPublisher::NatsPublisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NatsPublisher::~NatsPublisher() = default;
void NatsPublisher::start(const std::vector<unsigned>&) {}
void NatsPublisher::write(std::string_view) {}
void NatsPublisher::write_to(unsigned, std::string_view) {}
void NatsPublisher::seal() {}
bool NatsPublisher::settled() const {
    return true;
}
void NatsPublisher::pump() {}
bool NatsPublisher::finish(Clock::duration) {
    return false;
}
NatsPublisher::Counts NatsPublisher::counts() const {
    return {};
}
const NatsConfig& NatsPublisher::config() const {
    return impl_->config;
}

#endif

}  // namespace insert
