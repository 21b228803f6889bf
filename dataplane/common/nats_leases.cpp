#include "dataplane/common/nats_leases.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "dataplane/common/host_partition.hpp"
#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/nats_library.hpp"

#ifdef INSERT_HAVE_NATS
#include <nats/nats.h>

#include "dataplane/common/nats_connect.hpp"
#endif

namespace insert {

std::string output_stream_name(const std::string& prefix) {
    return prefix + "-out";
}

#ifdef INSERT_HAVE_NATS

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kApiWaitMs = 2000;
// Reading back a partition's published records: the longest wait for the next message.
constexpr int64_t kReadBackWaitMs = 5000;

std::string lease_key(unsigned k) {
    return "p." + std::to_string(k);
}

}  // namespace

struct NatsLeases::Impl {
    explicit Impl(const NatsLeaseConfig& c) : config(c) {}

    struct Held {
        uint64_t revision = 0;
        Clock::time_point renewed{};
        bool giving_back = false;
        bool orphan = false;  // taken beyond the share: nobody else took it (never given back)
    };

    void run();
    bool connect();
    bool bind_bucket();
    void look();
    void renew(Clock::time_point now);
    unsigned count_members();
    void take_free(unsigned share);
    bool take(unsigned k, bool orphan);
    void give_back_excess(unsigned share, Clock::time_point now);
    bool read_published(unsigned k, std::vector<uint64_t>& hashes, std::string& why);
    void emit(LeaseEvent e);
    void say(const std::string& what);

    NatsLeaseConfig config;
    std::string member_key;
    int event_fd = -1;
    std::thread thread;

    mutable std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
    bool still = false;   // hold_still()
    bool release = true;  // stop(): delete the leases
    std::vector<LeaseEvent> events;
    std::set<unsigned> handed_back;  // by the run, to delete (given_back())
    Counts counts;

    // The thread's own.
    std::map<unsigned, Held> held;
    Clock::time_point started{};
    Clock::time_point members_since{};
    unsigned last_members = 0;
    std::set<unsigned> leased;                // the partitions with a lease, at the last look
    std::map<unsigned, unsigned> free_looks;  // candidates seen without a lease, looks in a row
    std::string said;                         // the last problem said
    natsOptions* opts = nullptr;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    kvStore* kv = nullptr;
};

void NatsLeases::Impl::say(const std::string& what) {
    if (what == said) return;
    said = what;
    if (!what.empty()) std::fprintf(stderr, "%s: %s\n", config.label.c_str(), what.c_str());
}

void NatsLeases::Impl::emit(LeaseEvent e) {
    {
        std::lock_guard lk(mu);
        events.push_back(std::move(e));
    }
    const uint64_t one = 1;
    if (::write(event_fd, &one, sizeof one) < 0) {
        // An eventfd counter does not overflow at one per event.
    }
}

bool NatsLeases::Impl::connect() {
    natsStatus s = nats_connect::client_options(&opts, config.servers,
                                                "insert-correlate leases " + config.instance, true,
                                                nullptr, nullptr, nullptr);
    if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
        say("leases: cannot connect: " + nats_connect::status_text(s));
        return false;
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = kApiWaitMs;
    return natsConnection_JetStream(&js, nc, &jo) == NATS_OK;
}

// The bucket, made when missing with the input stream's replicas (it is looked at first:
// the leases wait for the stream, as the consumers do).
bool NatsLeases::Impl::bind_bucket() {
    if (kv) return true;
    const std::string bucket = config.prefix + "-leases";
    if (js_KeyValue(&kv, js, bucket.c_str()) == NATS_OK) return true;
    kv = nullptr;
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus found = js_GetStreamInfo(&si, js, config.prefix.c_str(), nullptr, &jerr);
    if (found == NATS_NOT_FOUND)
        say("stream " + config.prefix +
            ": not there yet (the first producer creates it); looking again with backoff");
    if (found != NATS_OK) return false;
    say("");
    const int replicas = si->Config ? std::max<int64_t>(1, si->Config->Replicas) : 1;
    jsStreamInfo_Destroy(si);
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = bucket.c_str();
    kc.Description = "insert-correlate: which instance owns which partition (docs/scale-out.md)";
    kc.History = 1;
    kc.TTL = std::chrono::duration_cast<std::chrono::nanoseconds>(config.ttl).count();
    kc.StorageType = js_FileStorage;
    kc.Replicas = replicas;
    const natsStatus s = js_CreateKeyValue(&kv, js, &kc);
    if (s != NATS_OK) {
        kv = nullptr;
        say("leases: bucket " + bucket + ": " + nats_connect::status_text(s) + "; trying again");
        return false;
    }
    return true;
}

void NatsLeases::Impl::renew(Clock::time_point now) {
    for (auto it = held.begin(); it != held.end();) {
        const unsigned k = it->first;
        Held& h = it->second;
        uint64_t rev = 0;
        const natsStatus s = kvStore_UpdateString(&rev, kv, lease_key(k).c_str(),
                                                  config.instance.c_str(), h.revision);
        if (s == NATS_OK) {
            h.revision = rev;
            h.renewed = now;
            ++it;
            continue;
        }
        // Another instance wrote the key (ours lapsed), or ours is about to lapse unrenewed:
        // the partition is not ours any more.
        const bool lapsing = now - h.renewed > config.ttl - config.interval;
        if (s != NATS_ERR && !lapsing) {
            ++it;
            continue;
        }
        std::fprintf(stderr, "%s: lost partition %u (its lease %s)\n", config.label.c_str(), k,
                     lapsing ? "lapsed unrenewed" : "is another instance's now");
        {
            std::lock_guard lk(mu);
            ++counts.lost;
        }
        emit({LeaseEvent::Kind::lost, k, {}});
        it = held.erase(it);
    }
}

unsigned NatsLeases::Impl::count_members() {
    kvKeysList keys{};
    kvWatchOptions wo;
    kvWatchOptions_Init(&wo);
    wo.Timeout = kApiWaitMs;
    unsigned members = 0;
    bool self = false;
    leased.clear();
    if (kvStore_Keys(&keys, kv, &wo) == NATS_OK) {
        for (int i = 0; i < keys.Count; ++i) {
            const std::string_view key(keys.Keys[i]);
            if (key.starts_with("p.")) leased.insert(std::stoul(std::string(key.substr(2))));
            if (!key.starts_with("m.")) continue;
            ++members;
            self |= key == member_key;
        }
        kvKeysList_Destroy(&keys);
    }
    return std::max(1u, members + (self ? 0 : 1));
}

// The records already published for partition k, read back from the output stream.
bool NatsLeases::Impl::read_published(unsigned k, std::vector<uint64_t>& hashes, std::string& why) {
    const std::string stream = output_stream_name(config.prefix);
    const std::string subject = nats_client::partition_subject(stream, k);
    natsMsg* last = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetLastMsg(&last, js, stream.c_str(), subject.c_str(), nullptr, &jerr);
    if (s == NATS_NOT_FOUND) return true;  // no stream yet, or nothing published for k
    if (s != NATS_OK) {
        why = "output stream " + stream + ": " + nats_connect::status_text(s);
        return false;
    }
    const uint64_t last_seq = natsMsg_GetSequence(last);
    natsMsg_Destroy(last);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream.c_str();
    so.Ordered = true;
    natsSubscription* sub = nullptr;
    s = js_SubscribeSync(&sub, js, subject.c_str(), nullptr, &so, &jerr);
    if (s != NATS_OK) {
        why = "output stream " + stream + ": cannot read " + subject + ": " +
              nats_connect::status_text(s);
        return false;
    }
    bool done = false;
    while (!done) {
        natsMsg* m = nullptr;
        s = natsSubscription_NextMsg(&m, sub, kReadBackWaitMs);
        if (s != NATS_OK) {
            why = "output stream " + stream + ": reading " + subject + ": " +
                  nats_connect::status_text(s);
            break;
        }
        jsMsgMetaData* meta = nullptr;
        if (natsMsg_GetMetaData(&meta, m) == NATS_OK && meta) {
            done = meta->Sequence.Stream >= last_seq;
            jsMsgMetaData_Destroy(meta);
        }
        std::string_view body(natsMsg_GetData(m) ? natsMsg_GetData(m) : "",
                              static_cast<std::size_t>(natsMsg_GetDataLength(m)));
        while (!body.empty()) {
            const std::size_t nl = body.find('\n');
            const std::string_view line = body.substr(0, nl);
            if (!line.empty()) hashes.push_back(fnv1a64(line));
            if (nl == std::string_view::npos) break;
            body.remove_prefix(nl + 1);
        }
        natsMsg_Destroy(m);
    }
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    return done;
}

// Up to the share; then any candidate nobody took for three looks in a row - the instances
// whose share has room may not be allowed it (--partitions), and a partition nobody owns is
// joined by nobody.
void NatsLeases::Impl::take_free(unsigned share) {
    for (unsigned k : config.candidates) {
        if (held.count(k) || leased.count(k))
            free_looks.erase(k);
        else
            ++free_looks[k];
    }
    // Each instance starts looking at its own place among the partitions, so that
    // instances starting together seldom reach for the same one.
    const std::size_t n = config.candidates.size();
    const std::size_t from = n ? fnv1a64(config.instance) % n : 0;
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned k = config.candidates[(from + i) % n];
        if (held.count(k)) continue;
        const bool within = held.size() < share;
        const auto looks = free_looks.find(k);
        if (!within && (looks == free_looks.end() || looks->second < 3)) continue;
        take(k, !within);
    }
}

bool NatsLeases::Impl::take(unsigned k, bool orphan) {
    {
        uint64_t rev = 0;
        if (kvStore_CreateString(&rev, kv, lease_key(k).c_str(), config.instance.c_str()) !=
            NATS_OK)
            return false;  // another instance's
        LeaseEvent e{LeaseEvent::Kind::taken, k, {}};
        std::string why;
        if (!read_published(k, e.published, why)) {
            // Without what was published the join would publish it again: not taken.
            say("partition " + std::to_string(k) + ": " + why + "; leaving it for now");
            kvStore_Delete(kv, lease_key(k).c_str());
            return false;
        }
        free_looks.erase(k);
        held[k] = {rev, Clock::now(), false, orphan};
        std::fprintf(stderr,
                     "%s: took partition %u (%zu records of it published before, not published "
                     "again)\n",
                     config.label.c_str(), k, e.published.size());
        {
            std::lock_guard lk(mu);
            ++counts.taken;
        }
        emit(std::move(e));
    }
    return true;
}

void NatsLeases::Impl::give_back_excess(unsigned share, Clock::time_point now) {
    // The members must have stood still for two intervals: an instance that is starting
    // takes its share before anyone gives any back.
    if (now - members_since < 2 * config.interval) return;
    // One that took a partition nobody else would keeps everything: giving back would only
    // pass partitions round among instances that may not all own them.
    for (const auto& [k, h] : held)
        if (h.orphan) return;
    std::size_t keeping = 0;
    for (const auto& [k, h] : held) keeping += h.giving_back ? 0 : 1;
    for (auto it = held.rbegin(); it != held.rend() && keeping > share; ++it) {
        if (it->second.giving_back) continue;
        it->second.giving_back = true;
        --keeping;
        std::fprintf(stderr, "%s: giving partition %u back (%u instances share %u partitions)\n",
                     config.label.c_str(), it->first, last_members, config.partitions);
        emit({LeaseEvent::Kind::give_back, it->first, {}});
    }
}

void NatsLeases::Impl::look() {
    const auto now = Clock::now();
    if (!bind_bucket()) return;
    kvStore_PutString(nullptr, kv, member_key.c_str(), config.instance.c_str());
    renew(now);
    std::set<unsigned> back;
    {
        std::lock_guard lk(mu);
        back.swap(handed_back);
    }
    for (unsigned k : back) {
        if (!held.count(k)) continue;
        kvStore_Delete(kv, lease_key(k).c_str());
        held.erase(k);
        std::lock_guard lk(mu);
        ++counts.given_back;
    }
    const unsigned members = count_members();
    if (members != last_members) {
        last_members = members;
        members_since = now;
    }
    {
        std::lock_guard lk(mu);
        counts.members = members;
    }
    // A starting instance looks for one interval and a half before it takes anything: the
    // instances started together see each other first.
    if (now - started < config.interval * 3 / 2) return;
    {
        std::lock_guard lk(mu);
        if (still) return;
    }
    const unsigned share = (config.partitions + members - 1) / members;
    take_free(share);
    give_back_excess(share, now);
}

void NatsLeases::Impl::run() {
    if (!connect()) return;
    started = members_since = Clock::now();
    for (;;) {
        if (natsConnection_Status(nc) == NATS_CONN_STATUS_CONNECTED) look();
        std::unique_lock lk(mu);
        cv.wait_for(lk, config.interval, [this] { return stopping || !handed_back.empty(); });
        if (stopping) break;
    }
    bool deleting = false;
    {
        std::lock_guard lk(mu);
        deleting = release;
    }
    if (deleting && kv && natsConnection_Status(nc) == NATS_CONN_STATUS_CONNECTED) {
        for (const auto& [k, h] : held) kvStore_Delete(kv, lease_key(k).c_str());
        kvStore_Delete(kv, member_key.c_str());
    }
    held.clear();
}

std::unique_ptr<NatsLeases> NatsLeases::create(const NatsLeaseConfig& config, std::string& error) {
    if (config.servers.empty()) {
        error = "--nats: no server";
        return nullptr;
    }
    if (config.instance.empty() ||
        config.instance.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789._-") != std::string::npos) {
        error = "--instance " + config.instance + ": letters, digits, '.', '_' and '-' only";
        return nullptr;
    }
    auto impl = std::make_unique<Impl>(config);
    impl->member_key = "m." + config.instance;
    impl->event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (impl->event_fd < 0) {
        error = "eventfd failed";
        return nullptr;
    }
    return std::unique_ptr<NatsLeases>(new NatsLeases(std::move(impl)));
}

NatsLeases::NatsLeases(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
    nats_library::hold();
}

NatsLeases::~NatsLeases() {
    stop();
    Impl& m = *impl_;
    if (m.kv) kvStore_Destroy(m.kv);
    if (m.js) jsCtx_Destroy(m.js);
    if (m.nc) natsConnection_Destroy(m.nc);
    if (m.opts) natsOptions_Destroy(m.opts);
    if (m.event_fd >= 0) ::close(m.event_fd);
    m.kv = nullptr;
    m.js = nullptr;
    m.nc = nullptr;
    m.opts = nullptr;
    nats_library::release([impl = std::shared_ptr<Impl>(std::move(impl_))] {});
}

void NatsLeases::start() {
    impl_->thread = std::thread([this] { impl_->run(); });
    pthread_setname_np(impl_->thread.native_handle(), "insert-leases");
}

int NatsLeases::fd() const {
    return impl_->event_fd;
}

void NatsLeases::take(std::vector<LeaseEvent>& out) {
    uint64_t ignored = 0;
    if (::read(impl_->event_fd, &ignored, sizeof ignored) < 0) {
        // EAGAIN: nothing signalled since the last take.
    }
    std::lock_guard lk(impl_->mu);
    for (LeaseEvent& e : impl_->events) out.push_back(std::move(e));
    impl_->events.clear();
}

void NatsLeases::given_back(unsigned k) {
    {
        std::lock_guard lk(impl_->mu);
        impl_->handed_back.insert(k);
    }
    impl_->cv.notify_all();
}

unsigned NatsLeases::others() const {
    std::lock_guard lk(impl_->mu);
    return impl_->counts.members > 0 ? impl_->counts.members - 1 : 0;
}

void NatsLeases::hold_still() {
    std::lock_guard lk(impl_->mu);
    impl_->still = true;
}

void NatsLeases::stop(bool release) {
    {
        std::lock_guard lk(impl_->mu);
        if (!impl_->stopping) impl_->release = release;
        impl_->stopping = true;
    }
    impl_->cv.notify_all();
    if (impl_->thread.joinable()) impl_->thread.join();
}

NatsLeases::Counts NatsLeases::counts() const {
    std::lock_guard lk(impl_->mu);
    return impl_->counts;
}

#else  // no libnats

struct NatsLeases::Impl {};

std::unique_ptr<NatsLeases> NatsLeases::create(const NatsLeaseConfig&, std::string& error) {
    error = "--nats: this build has no NATS client (install libnats-dev and rebuild)";
    return nullptr;
}
NatsLeases::NatsLeases(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NatsLeases::~NatsLeases() = default;
void NatsLeases::start() {}
int NatsLeases::fd() const {
    return -1;
}
void NatsLeases::take(std::vector<LeaseEvent>&) {}
void NatsLeases::given_back(unsigned) {}
void NatsLeases::hold_still() {}
unsigned NatsLeases::others() const {
    return 0;
}
void NatsLeases::stop(bool) {}
NatsLeases::Counts NatsLeases::counts() const {
    return {};
}

#endif

}  // namespace insert
