#include "dataplane/ports/lane.hpp"

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_pause.h>

namespace insert::ports {

namespace {

constexpr unsigned kTxDrainUs = 100;  // l2fwd's drain period: bounds the added latency
constexpr unsigned kTxRetries = 64;   // tries on a full Tx queue before dropping

}  // namespace

Lane::Lane(unsigned index, const PortSet& ports)
    : index_(index),
      tx_queue_(static_cast<uint16_t>(ports.single_tx() ? 0 : index)),
      ports_(ports),
      drain_tsc_(rte_get_tsc_hz() / 1'000'000 * kTxDrainUs) {}

std::unique_ptr<Lane> Lane::create(unsigned index, const PortSet& ports, std::string& error) {
    std::unique_ptr<Lane> lane(new Lane(index, ports));
    lane->error_context_.reserve(ports.size());  // the callbacks keep pointers into it
    for (const PortInfo& p : ports.ports()) {
        auto* buf = static_cast<rte_eth_dev_tx_buffer*>(
            rte_zmalloc_socket("insert_txbuf", RTE_ETH_TX_BUFFER_SIZE(PortSet::kBurst), 0,
                               static_cast<int>(rte_socket_id())));
        if (buf == nullptr) {
            error = "cannot allocate Tx buffers";
            return nullptr;
        }
        rte_eth_tx_buffer_init(buf, PortSet::kBurst);
        lane->error_context_.push_back({lane.get(), p.id});
        rte_eth_tx_buffer_set_err_callback(buf, on_tx_full, &lane->error_context_.back());
        lane->tx_.push_back(buf);
    }
    return lane;
}

Lane::~Lane() {
    for (rte_eth_dev_tx_buffer* b : tx_) {
        rte_pktmbuf_free_bulk(b->pkts, b->length);
        rte_free(b);
    }
}

// A full Tx queue: retry (back-pressure), then count and free what still does not fit.
void Lane::on_tx_full(rte_mbuf** unsent, uint16_t count, void* userdata) {
    auto* ctx = static_cast<ErrorContext*>(userdata);
    Lane& lane = *ctx->lane;
    uint16_t sent = 0;
    for (unsigned r = 0; r < kTxRetries && sent < count; ++r) {
        bump(lane.counters.tx_retries, 1);
        rte_pause();
        sent += rte_eth_tx_burst(ctx->port, lane.tx_queue_, unsent + sent, count - sent);
    }
    if (sent < count) {
        bump(lane.counters.tx_dropped, count - sent);
        rte_pktmbuf_free_bulk(unsent + sent, count - sent);
    }
}

void Lane::forward(rte_mbuf* m) noexcept {
    const uint16_t peer = ports_.peer(m->port);
    if (peer == UINT16_MAX) {  // monitor
        rte_pktmbuf_free(m);
        return;
    }
    rte_eth_tx_buffer(peer, tx_queue_, tx_[ports_.index(peer)], m);
    ++unflushed_;
}

void Lane::flush() noexcept {
    if (unflushed_ == 0) return;
    for (unsigned i = 0; i < tx_.size(); ++i)
        rte_eth_tx_buffer_flush(ports_.ports()[i].id, tx_queue_, tx_[i]);
    unflushed_ = 0;
    last_flush_ = rte_rdtsc();
}

void Lane::maybe_flush() noexcept {
    if (unflushed_ && rte_rdtsc() - last_flush_ >= drain_tsc_) flush();
}

void Lane::send(rte_mbuf** pkts, uint16_t n) noexcept {
    // Fast path (l2fwd/testpmd io style): a whole burst from one port with nothing buffered
    // for its peer goes out in one tx_burst, without copying through the Tx buffer.
    const uint16_t from = pkts[0]->port;
    bool one_port = true;
    for (uint16_t i = 1; i < n && one_port; ++i) one_port = pkts[i]->port == from;
    const uint16_t peer = ports_.peer(from);
    if (one_port && n >= PortSet::kBurst / 2 && peer != UINT16_MAX) {
        rte_eth_dev_tx_buffer* buf = tx_[ports_.index(peer)];
        if (buf->length == 0) {
            const uint16_t sent = rte_eth_tx_burst(peer, tx_queue_, pkts, n);
            if (sent < n) on_tx_full(pkts + sent, n - sent, buf->error_userdata);
            return;
        }
    }
    for (uint16_t i = 0; i < n; ++i) forward(pkts[i]);
}

}  // namespace insert::ports
