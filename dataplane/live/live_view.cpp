#include "dataplane/live/live_view.hpp"
#include "dataplane/common/qpn_text.hpp"

#include <chrono>
#include <string>

namespace insert::live {

namespace {

constexpr auto kPeriod = std::chrono::seconds(1);
constexpr std::size_t kTopRows = 5;

std::string fmt(const char* f, auto... args) {
    char buf[256];
    std::snprintf(buf, sizeof buf, f, args...);
    return buf;
}

double rate(uint64_t now, uint64_t before, double dt) {
    return dt > 0 && now >= before ? static_cast<double>(now - before) / dt : 0.0;
}

}  // namespace

LiveView::LiveView(const LiveStats& stats, std::FILE* out) : stats_(stats), out_(out) {}

LiveView::~LiveView() {
    stop();
}

void LiveView::start() {
    thread_ = std::thread([this] { loop(); });
}

void LiveView::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::string LiveView::render(const LiveTotals& now, const LiveTotals& before, double dt,
                             const LiveStats& stats) {
    std::string s;
    s += fmt("INSERT %s   up %.0f s   (Ctrl-C: stop, flush records, summary)\n",
             stats.mode().c_str(), now.uptime_s);
    s += fmt("rx   %10.3f Mpps  %8.3f Gb/s   frames %llu   missed %llu\n",
             rate(now.frames, before.frames, dt) / 1e6,
             rate(now.rx_bytes, before.rx_bytes, dt) * 8 / 1e9,
             static_cast<unsigned long long>(now.frames),
             static_cast<unsigned long long>(now.rx_missed));
    s += fmt("roce %10.3f Mpps  msgs %10.0f/s   endpoints %llu (live %llu)  connections %llu\n",
             rate(now.roce, before.roce, dt) / 1e6, rate(now.msgs, before.msgs, dt),
             static_cast<unsigned long long>(now.endpoints),
             static_cast<unsigned long long>(now.endpoints_live),
             static_cast<unsigned long long>(now.connections));
    s += fmt(
        "tx   %llu   passthrough %llu   tx retries %llu   tx dropped %llu   records dropped %llu   "
        "table full %llu (%llu endpoints)\n",
        static_cast<unsigned long long>(now.tx), static_cast<unsigned long long>(now.passthrough),
        static_cast<unsigned long long>(now.tx_retries),
        static_cast<unsigned long long>(now.tx_dropped),
        static_cast<unsigned long long>(now.records_dropped),
        static_cast<unsigned long long>(now.table_full),
        static_cast<unsigned long long>(now.table_full_endpoints));
    const Pipeline& pipe = stats.pipeline();
    for (unsigned w = 0; w < pipe.workers(); ++w)
        s += fmt("  worker %u: %llu frames, %llu endpoints\n", w,
                 static_cast<unsigned long long>(
                     pipe.worker(w).counters.frames.load(std::memory_order_relaxed)),
                 static_cast<unsigned long long>(
                     pipe.engine(w).counters().endpoints_live.load(std::memory_order_relaxed)));
    if (stats.boards()) {
        s += "top QPs (by bytes, as of the last --interval report)\n";
        s += fmt("  %-28s %12s %10s %8s %6s %6s %6s\n", "ip/qpn", "bytes", "pkts", "retx", "naks",
                 "cnps", "ecn_ce");
        for (const state::QpRecord& q : stats.boards()->top(kTopRows)) {
            const std::string key = q.ip.to_string() + "/" + qpn_text(q.qpn);
            s += fmt(
                "  %-28s %12llu %10llu %8llu %6llu %6llu %6llu\n", key.c_str(),
                static_cast<unsigned long long>(q.bytes), static_cast<unsigned long long>(q.pkts),
                static_cast<unsigned long long>(q.dup_pkts),
                static_cast<unsigned long long>(q.naks.seq + q.naks.rnr + q.naks.inv +
                                                q.naks.access + q.naks.op),
                static_cast<unsigned long long>(q.cnps), static_cast<unsigned long long>(q.ecn_ce));
        }
    }
    return s;
}

void LiveView::loop() {
    LiveTotals before = stats_.totals();
    auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, kPeriod, [this] { return stopping_; })) {
        const LiveTotals now = stats_.totals();
        const auto t1 = std::chrono::steady_clock::now();
        const std::string text =
            render(now, before, std::chrono::duration<double>(t1 - t0).count(), stats_);
        std::fputs("\033[H\033[2J", out_);  // home, clear screen
        std::fputs(text.c_str(), out_);
        std::fflush(out_);
        before = now;
        t0 = t1;
    }
}

}  // namespace insert::live
