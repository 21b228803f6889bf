#include "correlator/run/bus_inputs.hpp"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/version.hpp"

namespace insert::correlate {

namespace {

// Malformed messages said one by one, at most; the rest are counted.
constexpr std::size_t kMalformedSaid = 10;
// A producer's batch missing behind later ones is waited for this long: published again
// after a failed acknowledgement (2 s) once the stream has a leader again (an election took
// 4-6 s here).
constexpr auto kGapWait = std::chrono::seconds(30);

// A header holding a decimal number; nullopt when absent or not one.
std::optional<uint64_t> number(const BusMessage& m, const char* key) {
    const auto v = m.header(key);
    if (!v || v->empty()) return std::nullopt;
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size()) return std::nullopt;
    return n;
}

std::string_view major_of(std::string_view version) {
    return version.substr(0, version.find('.'));
}

}  // namespace

BusInputs::BusInputs(const BusOptions& options, std::function<LiveCorrelator*(unsigned)> engine_of,
                     HostNames& names, IngestCounts& counts)
    : options_(options),
      label_("insert-correlate: --nats " + options.url),
      engine_of_(std::move(engine_of)),
      parser_(names),
      counts_(counts),
      handled_(options.partitions) {}

BusInputs::~BusInputs() {
    finish();
}

bool BusInputs::open(std::string& error) {
    NatsConsumerConfig c;
    c.servers = options_.servers;
    c.prefix = options_.subject;
    c.partitions = options_.partitions;
    c.client = "insert-correlate " + options_.instance;
    c.label = label_;
    consumer_ = NatsConsumer::create(c, error);
    if (!consumer_) return false;
    consumer_->start();
    return true;
}

int BusInputs::fd() const {
    return consumer_ ? consumer_->fd() : -1;
}

void BusInputs::read() {
    if (!consumer_ || finished_) return;
    std::vector<BusMessage> waiting;
    consumer_->take(waiting);
    for (BusMessage& m : waiting) {
        handle(m);
        consumer_->ack(m);  // its records are in the join, refused, skipped - or held
    }
}

void BusInputs::check_gaps() {
    const auto now = std::chrono::steady_clock::now();
    for (uint32_t i = 0; i < streams_.size(); ++i) {
        Stream& s = streams_[i];
        if (s.ahead.empty() || now - s.waiting_since < kGapWait) continue;
        const uint64_t first = s.ahead.begin()->first;
        if (gaps_++ < kMalformedSaid)
            std::fprintf(stderr,
                         "%s: partition %u: batches %llu-%llu of %s did not come within %lld s: "
                         "going on without them (counted)\n",
                         label_.c_str(), s.partition, static_cast<unsigned long long>(s.next_seq),
                         static_cast<unsigned long long>(first - 1), s.producer.c_str(),
                         static_cast<long long>(
                             std::chrono::duration_cast<std::chrono::seconds>(kGapWait).count()));
        drain(i, true);
    }
}

void BusInputs::take_partition(unsigned k) {
    if (!consumer_ || finished_) return;
    if (k < handled_.size()) handled_[k] = SeqRanges();  // its consumer starts anew
    for (Stream& s : streams_)
        if (s.partition == k) {
            s.next_seq = 1;
            s.ahead.clear();
        }
    consumer_->add(k);
}

void BusInputs::drop_partition(unsigned k) {
    if (consumer_ && !finished_) consumer_->remove(k);
    for (Stream& s : streams_)
        if (s.partition == k) s.ahead.clear();
}

std::string BusInputs::where(const BusMessage& m) const {
    return std::string(m.subject()) + " (stream message " + std::to_string(m.stream_seq()) + ")";
}

std::string BusInputs::check(const BusMessage& m, bool& refused) const {
    refused = false;
    const auto partitions = number(m, "Insert-Partitions");
    const auto partition = number(m, "Insert-Partition");
    const auto producer = m.header("Insert-Producer");
    if (!partitions) return "no Insert-Partitions header with a number";
    if (!partition) return "no Insert-Partition header with a number";
    if (!producer || producer->empty()) return "no Insert-Producer header";
    refused = true;
    if (*partitions != options_.partitions)
        return "Insert-Partitions " + std::to_string(*partitions) +
               ", this correlator has --nats-partitions " + std::to_string(options_.partitions);
    if (*partition != m.partition())
        return "Insert-Partition " + std::to_string(*partition) + " on the subject of partition " +
               std::to_string(m.partition());
    if (const auto schema = m.header("Insert-Schema");
        schema && major_of(*schema) != major_of(kRecordSchema))
        return "Insert-Schema " + std::string(*schema) + ", this correlator reads schema " +
               std::string(kRecordSchema);
    refused = false;
    const std::string_view body = m.data();
    if (body.empty()) return "no records (an empty body)";
    if (body.back() != '\n') return "its last line has no newline (a batch cut short)";
    const auto lines = static_cast<uint64_t>(std::count(body.begin(), body.end(), '\n'));
    if (const auto records = number(m, "Insert-Records"); records && *records != lines)
        return "Insert-Records " + std::to_string(*records) + ", but " + std::to_string(lines) +
               (lines == 1 ? " line" : " lines");
    return {};
}

void BusInputs::refuse(const BusMessage& m, const std::string& why) {
    ++refused_;
    const std::string producer(m.header("Insert-Producer").value_or("?"));
    // Said once per producer and reason: a misconfigured producer sends many.
    if (!said_refused_.emplace(producer, why.substr(0, why.find(' '))).second) return;
    std::fprintf(stderr,
                 "%s: refused a message of %s on %s: %s (its records are not joined; counted, "
                 "said once per producer)\n",
                 label_.c_str(), producer.c_str(), where(m).c_str(), why.c_str());
}

void BusInputs::skip_malformed(const BusMessage& m, const std::string& why) {
    if (malformed_++ < kMalformedSaid)
        std::fprintf(stderr, "%s: skipped a malformed message on %s: %s (counted)\n",
                     label_.c_str(), where(m).c_str(), why.c_str());
}

uint32_t BusInputs::stream_of(unsigned partition, std::string_view producer) {
    const auto key = std::make_pair(partition, std::string(producer));
    if (const auto it = stream_index_.find(key); it != stream_index_.end()) return it->second;
    const auto index = static_cast<uint32_t>(streams_.size());
    streams_.push_back({partition, key.second, {}});
    stream_index_.emplace(key, index);
    return index;
}

std::size_t BusInputs::copy_body(std::string_view body) {
    if (capacity_ < body.size()) {
        capacity_ = std::max(body.size(), capacity_ * 2);
        buffer_.reset(new char[capacity_ + simdjson::SIMDJSON_PADDING]);
    }
    std::memcpy(buffer_.get(), body.data(), body.size());
    std::memset(buffer_.get() + body.size(), 0, simdjson::SIMDJSON_PADDING);
    return body.size();
}

void BusInputs::handle(BusMessage& m) {
    const unsigned k = m.partition();
    LiveCorrelator* engine = engine_of_(k);
    if (!engine) return;  // a partition given up since it was fetched
    // Delivered again after its acknowledgement was lost (or came too late).
    if (m.stream_seq() != 0 && k < handled_.size()) {
        if (handled_[k].contains(m.stream_seq())) {
            ++again_;
            return;
        }
        handled_[k].add(m.stream_seq());
    }
    bool refused = false;
    if (const std::string why = check(m, refused); !why.empty()) {
        if (refused)
            refuse(m, why);
        else
            skip_malformed(m, why);
        return;
    }
    const uint32_t input = stream_of(k, *m.header("Insert-Producer"));
    Stream& s = streams_[input];
    const auto seq = number(m, "Insert-Seq");
    if (!seq) {  // a producer that does not number its batches: as they come
        join(m, input, *engine);
        return;
    }
    if (*seq < s.next_seq) {
        // A batch the partition went on without (its gap given up on): joined now, late.
        if (s.skipped.erase(*seq) > 0) {
            join(m, input, *engine);
            return;
        }
        ++again_;  // stored twice (published again past the duplicate window)
        return;
    }
    if (*seq > s.next_seq) {
        if (s.ahead.empty()) s.waiting_since = std::chrono::steady_clock::now();
        s.ahead.emplace(*seq, std::move(m));
        ++reordered_;
        return;
    }
    join(m, input, *engine);
    s.next_seq = *seq + 1;
    drain(input, false);
}

void BusInputs::drain(uint32_t input, bool give_up) {
    Stream& s = streams_[input];
    LiveCorrelator* engine = engine_of_(s.partition);
    while (!s.ahead.empty() && engine && (give_up || s.ahead.begin()->first == s.next_seq)) {
        auto node = s.ahead.extract(s.ahead.begin());
        for (uint64_t missing = s.next_seq; missing < node.key() && s.skipped.size() < 4096;
             ++missing)
            s.skipped.insert(missing);
        join(node.mapped(), input, *engine);
        consumer_->ack(node.mapped());
        s.next_seq = node.key() + 1;
        give_up = false;  // past the gap: in order again
    }
    if (!s.ahead.empty()) s.waiting_since = std::chrono::steady_clock::now();
}

void BusInputs::join(const BusMessage& m, uint32_t input, LiveCorrelator& engine) {
    const std::string_view producer = *m.header("Insert-Producer");
    const std::size_t bytes = copy_body(m.data());
    Ingested block;
    parse_block(parser_, buffer_.get(), bytes, input, 1, false, block, block.counts,
                block.first_bad);
    block.counts.bytes += m.data().size();
    counts_.add(block.counts);
    streams_[input].counts.add(block.counts);
    for (const BadLine& b : block.first_bad)
        if (bad_reported_++ < kMaxReported)
            std::fprintf(stderr, "insert-correlate: %s, %.*s batch %s, line %llu: %s\n",
                         where(m).c_str(), static_cast<int>(producer.size()), producer.data(),
                         std::string(m.header("Insert-Seq").value_or("?")).c_str(),
                         static_cast<unsigned long long>(b.line), b.reason.c_str());
    ++messages_;
    records_ += block.counts.records();
    engine.add(input, block);
}

void BusInputs::finish() {
    if (finished_ || !consumer_) return;
    // The end: what waited behind a missing batch is joined without it.
    for (uint32_t i = 0; i < streams_.size(); ++i)
        if (!streams_[i].ahead.empty()) {
            ++gaps_;
            drain(i, true);
        }
    finished_ = true;
    consumer_->stop();
    const NatsConsumer::Counts c = consumer_->counts();
    std::set<std::string> producers;
    for (const Stream& s : streams_) producers.insert(s.producer);
    std::fprintf(
        stderr,
        "%s: %llu messages (%llu records) from %zu producer%s; %llu "
        "refused, %llu malformed, %llu delivered again and skipped; %llu held for "
        "their turn, %llu gaps gone on without; %llu connection%s\n",
        label_.c_str(), static_cast<unsigned long long>(messages_),
        static_cast<unsigned long long>(records_), producers.size(),
        producers.size() == 1 ? "" : "s", static_cast<unsigned long long>(refused_),
        static_cast<unsigned long long>(malformed_), static_cast<unsigned long long>(again_),
        static_cast<unsigned long long>(reordered_), static_cast<unsigned long long>(gaps_),
        static_cast<unsigned long long>(c.connects), c.connects == 1 ? "" : "s");
}

void BusInputs::producers(std::vector<ProducerState>& out, std::size_t room) const {
    for (std::size_t i = 0; i < streams_.size() && room > 0; ++i, --room) {
        const Stream& s = streams_[i];
        const auto input = static_cast<uint32_t>(i);
        const LiveCorrelator* engine = engine_of_(s.partition);
        out.push_back({s.producer + "@p" + std::to_string(s.partition), input, s.counts,
                       engine ? engine->newest(input) : std::nullopt});
    }
}

}  // namespace insert::correlate
