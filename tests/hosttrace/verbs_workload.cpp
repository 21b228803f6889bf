// A verbs application for insert-trace's tests: two RC QPs in one process (device 0 and
// device 1 of ibv_get_device_list), connected to each other, doing RDMA WRITEs and SENDs.
// It prints its own ground truth as JSON Lines ({"truth": ...}) on stdout so the test can
// compare the tracer's output with what really happened. Written only against
// <infiniband/verbs.h>: it runs on softverbs or on a real NIC.
//
//   verbs_workload devices                    ibv_get_device_list, print the count
//   verbs_workload fake-provider [--sync]     drive the exported verbs of the library it
//                                             runs with through a hand-made provider (below)
//   verbs_workload run [--ops N] [--sync]     the scenario below; --sync waits for a line
//                                             on stdin at each "phase" record
//   verbs_workload spin                       set up, then post and poll until killed
//   verbs_workload idle-post [--sync]         posts (main thread and a named thread) and
//                                             waits at "posted" without any verb call
//   verbs_workload post-exit [--sync]         3 WRITEs and their completions, then exit()
//                                             at once, QPs and MRs left open
//   verbs_workload mr-loop N                  N x (ibv_reg_mr + ibv_dereg_mr), one PD
//   verbs_workload churn SECONDS [--pairs N] [--ops N]
//                                             for the tracer's soak: rounds of a new thread
//                                             that opens the devices, connects N QP pairs,
//                                             moves data, destroys it all; no truth lines
//   verbs_workload bench-reg N | bench-post N | bench-poll N
//   verbs_workload bench-fake N [--sync]      (cost model) ns per call of a verb in a loop;
//                                             bench-fake: through the fake provider
//   verbs_workload bench-sv N [--sync]        (cost model) softverbs: empty polls, messages
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <pthread.h>
#include <sys/mman.h>
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBufferBytes = 1 << 20;
constexpr uint32_t kWriteBytes = 4096;
constexpr uint32_t kSendBytes = 512;
constexpr int kPollBatch = 16;
constexpr auto kCompletionDeadline = std::chrono::seconds(20);
constexpr ibv_mtu kMtu = IBV_MTU_1024;

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "verbs_workload: %s: %s\n", what, std::strerror(errno));
    std::exit(1);
}

struct Endpoint {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    ibv_mr* mr = nullptr;
    ibv_gid gid{};
    std::vector<uint8_t> buf = std::vector<uint8_t>(kBufferBytes);
};

// churn: no truth lines (the soak counts the tracer's records, not the workload's).
bool g_quiet = false;

void truth(const std::string& json) {
    if (g_quiet) return;
    std::printf("{\"truth\":%s}\n", json.c_str());
    std::fflush(stdout);
}

void phase(const char* name, bool sync) {
    // t_ns on CLOCK_MONOTONIC, the tracer's clock: a test can split the trace at a phase.
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    std::printf("{\"phase\":\"%s\",\"pid\":%d,\"t_ns\":%lld}\n", name, static_cast<int>(getpid()),
                static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec);
    std::fflush(stdout);
    if (sync) {
        std::string line;
        std::getline(std::cin, line);
    }
}

ibv_mr* reg(ibv_pd* pd, void* addr, size_t len, int access) {
    ibv_mr* mr = ibv_reg_mr(pd, addr, len, access);
    if (!mr) die("ibv_reg_mr");
    char b[256];
    std::snprintf(b, sizeof(b),
                  "{\"what\":\"mr\",\"addr\":%" PRIu64
                  ",\"length\":%zu,\"lkey\":%u,\"rkey\":%u,\"access\":%d}",
                  reinterpret_cast<uint64_t>(addr), len, mr->lkey, mr->rkey, access);
    truth(b);
    return mr;
}

void open_endpoint(ibv_device* dev, Endpoint& e, bool use_ex) {
    e.ctx = ibv_open_device(dev);
    if (!e.ctx) die("ibv_open_device");
    if (ibv_query_gid(e.ctx, 1, 0, &e.gid)) die("ibv_query_gid");
    e.pd = ibv_alloc_pd(e.ctx);
    if (!e.pd) die("ibv_alloc_pd");
    e.cq = ibv_create_cq(e.ctx, 256, nullptr, nullptr, 0);
    if (!e.cq) die("ibv_create_cq");
    e.mr = reg(e.pd, e.buf.data(), e.buf.size(),
               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    // ibv_create_qp_ex is inline (verbs_context.create_qp_ex): the tracer finds it through
    // the context, like the data path.
    ibv_qp_init_attr_ex init{};
    init.send_cq = e.cq;
    init.recv_cq = e.cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 128;
    init.cap.max_recv_wr = 128;
    init.cap.max_send_sge = 4;
    init.cap.max_recv_sge = 4;
    init.comp_mask = IBV_QP_INIT_ATTR_PD;
    init.pd = e.pd;
    e.qp = use_ex ? ibv_create_qp_ex(e.ctx, &init)
                  : ibv_create_qp(e.pd, reinterpret_cast<ibv_qp_init_attr*>(&init));
    if (!e.qp) die(use_ex ? "ibv_create_qp_ex" : "ibv_create_qp");
    char b[128];
    std::snprintf(b, sizeof(b), "{\"what\":\"qp\",\"qpn\":%u}", e.qp->qp_num);
    truth(b);
}

std::string ip_of(const ibv_gid& g) {
    char b[32];
    std::snprintf(b, sizeof(b), "%u.%u.%u.%u", g.raw[12], g.raw[13], g.raw[14], g.raw[15]);
    return b;
}

void modify(ibv_qp* qp, ibv_qp_attr& attr, int mask, const std::string& detail) {
    if (ibv_modify_qp(qp, &attr, mask)) die("ibv_modify_qp");
    static const char* kStates[] = {"RESET", "INIT", "RTR", "RTS"};
    truth("{\"what\":\"modify\",\"qpn\":" + std::to_string(qp->qp_num) + ",\"state\":\"" +
          kStates[attr.qp_state] + "\"" + detail + "}");
}

void connect(Endpoint& self, const Endpoint& peer, uint32_t rq_psn, uint32_t sq_psn) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = 0;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    modify(self.qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "");

    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = kMtu;
    a.dest_qp_num = peer.qp->qp_num;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer.gid;
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    modify(self.qp, a,
           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
           ",\"dest_qpn\":" + std::to_string(peer.qp->qp_num) +
               ",\"rq_psn\":" + std::to_string(rq_psn) + ",\"path_mtu\":1024,\"peer_ip\":\"" +
               ip_of(peer.gid) + "\",\"ip\":\"" + ip_of(self.gid) + "\"");

    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = sq_psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    modify(self.qp, a,
           IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
               IBV_QP_MAX_QP_RD_ATOMIC,
           ",\"sq_psn\":" + std::to_string(sq_psn));
}

void post_send(Endpoint& e, ibv_wr_opcode op, uint64_t wr_id, uint32_t offset, uint32_t len,
               uint64_t remote_addr, uint32_t rkey, uint32_t imm) {
    ibv_sge sge{reinterpret_cast<uint64_t>(e.buf.data() + offset), len, e.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(imm);
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(e.qp, &wr, &bad)) die("ibv_post_send");
    char b[256];
    std::snprintf(b, sizeof(b),
                  "{\"what\":\"send\",\"qpn\":%u,\"wr_id\":%" PRIu64
                  ",\"opcode\":%d,\"len\":%u,"
                  "\"remote_addr\":%" PRIu64 ",\"rkey\":%u,\"imm\":%u}",
                  e.qp->qp_num, wr_id, static_cast<int>(op), len, remote_addr, rkey, imm);
    truth(b);
}

// One chained ibv_post_recv of `count` receives: exercises the wr->next walk.
void post_recvs(Endpoint& e, uint64_t first_wr_id, int count) {
    std::vector<ibv_sge> sges(count);
    std::vector<ibv_recv_wr> wrs(count);
    for (int i = 0; i < count; i++) {
        sges[i] = {reinterpret_cast<uint64_t>(e.buf.data() + kBufferBytes / 2 + i * kSendBytes),
                   kSendBytes, e.mr->lkey};
        wrs[i] = {};
        wrs[i].wr_id = first_wr_id + i;
        wrs[i].sg_list = &sges[i];
        wrs[i].num_sge = 1;
        wrs[i].next = i + 1 < count ? &wrs[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(e.qp, wrs.data(), &bad)) die("ibv_post_recv");
    for (int i = 0; i < count; i++) {
        char b[160];
        std::snprintf(b, sizeof(b),
                      "{\"what\":\"recv\",\"qpn\":%u,\"wr_id\":%" PRIu64 ",\"len\":%u}",
                      e.qp->qp_num, first_wr_id + i, kSendBytes);
        truth(b);
    }
}

// Polls until `want` completions arrived; every completion becomes a truth record.
void drain(Endpoint& e, int want) {
    const auto deadline = std::chrono::steady_clock::now() + kCompletionDeadline;
    ibv_wc wc[kPollBatch];
    int got = 0;
    while (got < want) {
        const int n = ibv_poll_cq(e.cq, kPollBatch, wc);
        if (n < 0) die("ibv_poll_cq");
        for (int i = 0; i < n; i++) {
            char b[200];
            std::snprintf(b, sizeof(b),
                          "{\"what\":\"wc\",\"qpn\":%u,\"wr_id\":%" PRIu64
                          ",\"status\":%d,\"opcode\":%d,"
                          "\"byte_len\":%u}",
                          wc[i].qp_num, wc[i].wr_id, wc[i].status, wc[i].opcode, wc[i].byte_len);
            truth(b);
            if (wc[i].status != IBV_WC_SUCCESS) {
                std::fprintf(stderr, "verbs_workload: completion %s\n",
                             ibv_wc_status_str(wc[i].status));
                std::exit(1);
            }
        }
        got += n;
        if (std::chrono::steady_clock::now() > deadline) {
            std::fprintf(stderr, "verbs_workload: %d of %d completions before the deadline\n", got,
                         want);
            std::exit(1);
        }
    }
}

void teardown(Endpoint& e) {
    const uint32_t qpn = e.qp->qp_num;
    if (ibv_destroy_qp(e.qp)) die("ibv_destroy_qp");
    truth("{\"what\":\"destroy_qp\",\"qpn\":" + std::to_string(qpn) + "}");
    const uint32_t rkey = e.mr->rkey;
    if (ibv_dereg_mr(e.mr)) die("ibv_dereg_mr");
    truth("{\"what\":\"dereg_mr\",\"rkey\":" + std::to_string(rkey) + "}");
    ibv_destroy_cq(e.cq);
    ibv_dealloc_pd(e.pd);
    ibv_close_device(e.ctx);
}

ibv_device** devices(int& n) {
    ibv_device** list = ibv_get_device_list(&n);
    if (!list) die("ibv_get_device_list");
    return list;
}

void setup_pair(Endpoint& a, Endpoint& b) {
    int n = 0;
    ibv_device** list = devices(n);
    if (n < 1) {
        std::fprintf(stderr, "verbs_workload: no RDMA device\n");
        std::exit(1);
    }
    open_endpoint(list[0], a, false);
    open_endpoint(list[n > 1 ? 1 : 0], b, true);
    ibv_free_device_list(list);
    connect(a, b, /*rq_psn=*/1000, /*sq_psn=*/2000);
    connect(b, a, /*rq_psn=*/2000, /*sq_psn=*/1000);
}

int run(int ops, bool sync) {
    Endpoint a, b;
    setup_pair(a, b);
    phase("setup", sync);
    // A second MR registered after the first sync point: a tracer attached late sees it.
    std::vector<uint8_t> extra(8192);
    ibv_mr* extra_mr = reg(a.pd, extra.data(), extra.size(), IBV_ACCESS_LOCAL_WRITE);
    phase("mr2", sync);

    post_recvs(b, 5000, ops);
    const uint64_t b_addr = reinterpret_cast<uint64_t>(b.buf.data());
    for (int i = 0; i < ops; i++) {
        post_send(a, IBV_WR_RDMA_WRITE, 100 + i, 0, kWriteBytes, b_addr + i * kWriteBytes,
                  b.mr->rkey, 0);
        post_send(a, IBV_WR_SEND_WITH_IMM, 200 + i, kWriteBytes, kSendBytes, 0, 0, 0xabc0 + i);
    }
    drain(a, 2 * ops);
    drain(b, ops);
    phase("data", false);

    const uint32_t extra_rkey = extra_mr->rkey;
    if (ibv_dereg_mr(extra_mr)) die("ibv_dereg_mr");
    truth("{\"what\":\"dereg_mr\",\"rkey\":" + std::to_string(extra_rkey) + "}");
    teardown(a);
    teardown(b);
    phase("done", false);
    return 0;
}

// Work that softverbs' trace ring holds until its flusher thread reports it: 3 WRITEs from
// the main thread and 2 from a thread named "vw-poster", then no verb call at all while the
// test waits at "posted" (sync) for their post_send records. The completions are polled
// after that; the thread exits, the QPs are destroyed.
int idle_post(bool sync) {
    Endpoint a, b;
    setup_pair(a, b);
    phase("setup", sync);
    const uint64_t b_addr = reinterpret_cast<uint64_t>(b.buf.data());
    phase("before", false);
    for (uint64_t i = 0; i < 3; i++)
        post_send(a, IBV_WR_RDMA_WRITE, 300 + i, 0, kWriteBytes, b_addr + i * kWriteBytes,
                  b.mr->rkey, 0);
    std::mutex m;
    std::condition_variable cv;
    bool posted = false, leave = false;
    std::thread poster([&] {
        pthread_setname_np(pthread_self(), "vw-poster");
        std::printf("{\"poster_tid\":%d}\n", static_cast<int>(gettid()));
        for (uint64_t i = 0; i < 2; i++)
            post_send(a, IBV_WR_RDMA_WRITE, 310 + i, 0, kWriteBytes, b_addr + (3 + i) * kWriteBytes,
                      b.mr->rkey, 0);
        std::unique_lock lock(m);
        posted = true;
        cv.notify_all();
        cv.wait(lock, [&] { return leave; });
    });
    {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return posted; });
    }
    phase("posted", sync);
    {
        std::lock_guard lock(m);
        leave = true;
        cv.notify_all();
    }
    poster.join();
    drain(a, 5);
    phase("data", false);
    teardown(a);
    teardown(b);
    phase("done", false);
    return 0;
}

// Fewer records than a site call holds, and an exit before the flusher's first tick: only
// softverbs' exit-time flush can report them. Nothing is destroyed.
int post_exit(bool sync) {
    static Endpoint a, b;  // never destroyed: the process exits with them open
    setup_pair(a, b);
    phase("setup", sync);
    const uint64_t b_addr = reinterpret_cast<uint64_t>(b.buf.data());
    for (uint64_t i = 0; i < 3; i++)
        post_send(a, IBV_WR_RDMA_WRITE, 400 + i, 0, kWriteBytes, b_addr + i * kWriteBytes,
                  b.mr->rkey, 0);
    drain(a, 3);
    phase("done", false);
    std::exit(0);
}

int spin() {
    Endpoint a, b;
    setup_pair(a, b);
    phase("setup", false);
    const uint64_t b_addr = reinterpret_cast<uint64_t>(b.buf.data());
    for (uint64_t i = 0;; i++) {
        post_send(a, IBV_WR_RDMA_WRITE, i, 0, kWriteBytes, b_addr, b.mr->rkey, 0);
        drain(a, 1);
    }
}

int mr_loop(long n) {
    int count = 0;
    ibv_device** list = devices(count);
    if (count < 1) die("no RDMA device");
    Endpoint e;
    e.ctx = ibv_open_device(list[0]);
    e.pd = e.ctx ? ibv_alloc_pd(e.ctx) : nullptr;
    if (!e.pd) die("ibv_alloc_pd");
    for (long i = 0; i < n; i++) {
        ibv_mr* mr = ibv_reg_mr(e.pd, e.buf.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
        if (!mr || ibv_dereg_mr(mr)) die("reg/dereg");
    }
    std::printf("{\"mr_loop\":%ld}\n", n);
    return 0;
}

// Polls until `want` completions arrived or the deadline passed, without stopping at an
// error: the number of completions that failed or never came (churn: a loaded machine can
// starve softverbs' progress thread into "transport retry counter exceeded").
int drain_counting_errors(Endpoint& e, int want) {
    const auto deadline = std::chrono::steady_clock::now() + kCompletionDeadline;
    ibv_wc wc[kPollBatch];
    int got = 0, errors = 0;
    while (got < want && std::chrono::steady_clock::now() < deadline) {
        const int n = ibv_poll_cq(e.cq, kPollBatch, wc);
        if (n < 0) die("ibv_poll_cq");
        for (int i = 0; i < n; i++) errors += wc[i].status != IBV_WC_SUCCESS;
        got += n;
    }
    return errors + (want - std::min(got, want));
}

// The tracer's soak (scripts/soak-tracer.py): objects created and destroyed continuously
// in one long-lived process. Each round is a new thread (a new tid and softverbs trace
// ring) that opens both devices once per pair (new contexts), connects `pairs` QP pairs,
// registers a second MR on each side, posts `ops` WRITEs and SENDs on each pair and polls
// every completion, then deregisters, destroys and closes everything. Once a second, and
// at the end, one line of totals: {"churn":{"rounds":R,"qps":Q,"mrs":M,"wrs":W,"errors":E}}
// (E: work requests that failed or did not complete; the churn goes on).
int churn(double seconds, int pairs, int ops) {
    g_quiet = true;
    uint64_t rounds = 0, qps = 0, mrs = 0, wrs = 0, errors = 0;
    const auto report = [&] {
        std::printf("{\"churn\":{\"rounds\":%" PRIu64 ",\"qps\":%" PRIu64 ",\"mrs\":%" PRIu64
                    ",\"wrs\":%" PRIu64 ",\"errors\":%" PRIu64 "}}\n",
                    rounds, qps, mrs, wrs, errors);
        std::fflush(stdout);
    };
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    auto next_report = start + std::chrono::seconds(1);
    while (std::chrono::steady_clock::now() < end) {
        std::thread round([&] {
            pthread_setname_np(pthread_self(), "vw-churn");
            for (int p = 0; p < pairs; p++) {
                Endpoint a, b;
                setup_pair(a, b);
                std::vector<uint8_t> extra_a(8192), extra_b(8192);
                ibv_mr* ma = reg(a.pd, extra_a.data(), extra_a.size(), IBV_ACCESS_LOCAL_WRITE);
                ibv_mr* mb = reg(b.pd, extra_b.data(), extra_b.size(), IBV_ACCESS_LOCAL_WRITE);
                post_recvs(b, 5000, ops);
                const uint64_t b_addr = reinterpret_cast<uint64_t>(b.buf.data());
                for (int i = 0; i < ops; i++) {
                    post_send(a, IBV_WR_RDMA_WRITE, 100 + i, 0, kWriteBytes,
                              b_addr + i * kWriteBytes, b.mr->rkey, 0);
                    post_send(a, IBV_WR_SEND_WITH_IMM, 200 + i, kWriteBytes, kSendBytes, 0, 0, i);
                }
                const int failed_a = drain_counting_errors(a, 2 * ops);
                // After a failed send the receives never complete: flushed when b's QP goes.
                errors += failed_a + (failed_a == 0 ? drain_counting_errors(b, ops) : 0);
                if (ibv_dereg_mr(ma) || ibv_dereg_mr(mb)) die("ibv_dereg_mr");
                teardown(a);
                teardown(b);
                qps += 2;
                mrs += 4;
                wrs += 3 * ops;
            }
        });
        round.join();
        rounds++;
        if (std::chrono::steady_clock::now() >= next_report) {
            next_report += std::chrono::seconds(1);
            report();
        }
    }
    report();
    return 0;
}

double thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// ns per call of one verb; prints a JSON line with the figure. CPU time of the thread
// (user + kernel, so breakpoint traps count) is the figure that a loaded machine does not
// distort; wall time is printed beside it.
template <typename F>
void time_calls(const char* name, long n, F&& call) {
    const double cpu0 = thread_cpu_ns();
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; i++) call(i);
    const auto ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = thread_cpu_ns() - cpu0;
    std::printf("{\"bench\":\"%s\",\"calls\":%ld,\"ns_per_call\":%.1f,\"cpu_ns_per_call\":%.1f}\n",
                name, n, ns / n, cpu / n);
}

int bench(const std::string& what, long n) {
    Endpoint a, b;
    setup_pair(a, b);
    if (what == "bench-reg") {
        time_calls("reg_mr+dereg_mr", n, [&](long) {
            ibv_mr* mr = ibv_reg_mr(a.pd, a.buf.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
            if (!mr || ibv_dereg_mr(mr)) die("reg/dereg");
        });
    } else if (what == "bench-post") {
        // Unsignaled zero-length WRITEs in batches of 64, each batch followed by a signaled
        // one and its completion, so the send queue never overflows.
        ibv_sge sge{reinterpret_cast<uint64_t>(a.buf.data()), 0, a.mr->lkey};
        ibv_send_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(b.buf.data());
        wr.wr.rdma.rkey = b.mr->rkey;
        time_calls("post_send", n, [&](long i) {
            wr.wr_id = static_cast<uint64_t>(i);
            const bool last = i % 64 == 63;
            wr.send_flags = last ? IBV_SEND_SIGNALED : 0;
            ibv_send_wr* bad = nullptr;
            if (ibv_post_send(a.qp, &wr, &bad)) die("ibv_post_send");
            if (last) {
                ibv_wc wc;
                while (ibv_poll_cq(a.cq, 1, &wc) == 0) {
                }
            }
        });
    } else if (what == "bench-poll") {
        ibv_wc wc[kPollBatch];
        time_calls("poll_cq(empty)", n, [&](long) {
            if (ibv_poll_cq(a.cq, kPollBatch, wc) != 0) die("unexpected completion");
        });
    } else {
        std::fprintf(stderr, "verbs_workload: unknown mode %s\n", what.c_str());
        return 2;
    }
    return 0;
}

// Cost of a traced message on softverbs (its trace sites, or with `--sites off` its
// NOP-prefixed ops entries): empty polls; a 64-byte RDMA WRITE over loopback and the polls
// until its completion; and the same two verbs without the network - on a QP in the error
// state, where a post completes at once (flushed) and one poll returns the completion.
int bench_sv(long n, bool sync) {
    Endpoint a, b;
    setup_pair(a, b);
    phase("setup", sync);
    ibv_wc wc[kPollBatch];
    time_calls("sv poll_cq(empty)", n, [&](long) {
        if (ibv_poll_cq(a.cq, kPollBatch, wc) != 0) die("unexpected completion");
    });

    ibv_sge sge{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(b.buf.data());
    wr.wr.rdma.rkey = b.mr->rkey;
    long empty_polls = 0;
    const long messages = std::max(1L, n / 5);
    auto post_and_wait = [&](long i) {
        wr.wr_id = static_cast<uint64_t>(i);
        ibv_send_wr* bad = nullptr;
        if (ibv_post_send(a.qp, &wr, &bad)) die("ibv_post_send");
        int k;
        while ((k = ibv_poll_cq(a.cq, 1, wc)) == 0) empty_polls++;
        if (k < 0 || wc[0].status != IBV_WC_SUCCESS) die("completion");
    };
    time_calls("sv message: WRITE 64 B + polls to its completion", messages, post_and_wait);
    std::printf("{\"bench_info\":\"empty polls per message\",\"value\":%.1f}\n",
                static_cast<double>(empty_polls) / messages);

    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    if (ibv_modify_qp(a.qp, &attr, IBV_QP_STATE)) die("ibv_modify_qp ERR");
    time_calls("sv message on an ERR QP: post_send + poll_cq(1)", n, [&](long i) {
        wr.wr_id = static_cast<uint64_t>(i);
        ibv_send_wr* bad = nullptr;
        if (ibv_post_send(a.qp, &wr, &bad)) die("ibv_post_send");
        if (ibv_poll_cq(a.cq, 1, wc) != 1 || wc[0].wr_id != static_cast<uint64_t>(i))
            die("flushed completion");
    });
    return 0;
}

// ---- fake provider --------------------------------------------------------------------
// On a host without RDMA devices the system's libibverbs opens no context, so nothing
// would ever reach the probed functions. This mode builds a context by hand, as a provider
// would: the exported verbs (ibv_alloc_pd, ibv_reg_mr, ibv_create_qp, ibv_modify_qp, ...)
// of the real library then run for real and call into the private ops table, every slot
// of which points at fake_op(); the inline data-path verbs call the ops of ibv_context,
// which point at fake_post_send/fake_post_recv/fake_poll_cq in this executable - a
// provider living in another file than libibverbs, like mlx5. fake_op() returns one
// object for every pointer-returning op; the object sits at an address whose low 32 bits
// are zero, so the int-returning ops (modify_qp, destroy_qp, dereg_mr) see 0: success.
constexpr uintptr_t kFakeObjectAddress = 0x5e0000000000;
constexpr size_t kFakeObjectBytes = 4096;
constexpr uint32_t kFakeLkey = 0x1111;
constexpr uint32_t kFakeRkey = 0x2222;
constexpr uint32_t kFakeQpn = 0xabcde;

void* g_fake_object = nullptr;

extern "C" __attribute__((noinline)) void* fake_op() {
    return g_fake_object;
}

__attribute__((noinline)) int fake_post_send(ibv_qp*, ibv_send_wr*, ibv_send_wr**) {
    return 0;
}

// Starts with a 5-byte NOP, as softverbs' entry points and kernel-style patchable entries
// do: the kernel turns a uprobe there into a call instead of a breakpoint trap.
extern "C" int fake_post_recv(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**);
asm(".text\n"
    ".type fake_post_recv, @function\n"
    "fake_post_recv:\n"
    "    .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"  // nopl 0x0(%rax,%rax,1)
    "    xorl %eax, %eax\n"
    "    ret\n"
    ".size fake_post_recv, .-fake_post_recv\n");

__attribute__((noinline)) int fake_poll_cq(ibv_cq*, int n, ibv_wc* wc) {
    if (n < 1) return 0;
    std::memset(wc, 0, sizeof(*wc));
    wc->wr_id = 77;
    wc->status = IBV_WC_SUCCESS;
    wc->opcode = IBV_WC_RDMA_WRITE;
    wc->byte_len = 4096;
    wc->qp_num = kFakeQpn;
    return 1;
}

// The hand-made context: private ops -> fake_op, data-path ops -> fake_* functions.
ibv_context* fake_context() {
    g_fake_object =
        mmap(reinterpret_cast<void*>(kFakeObjectAddress), kFakeObjectBytes, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (g_fake_object != reinterpret_cast<void*>(kFakeObjectAddress))
        die("mmap of the fake object");
    static void* slots[1024];  // the private ops table: 8 KiB covers every slot
    for (void*& s : slots) s = reinterpret_cast<void*>(&fake_op);
    static verbs_context vctx{};
    static ibv_device device{};
    std::snprintf(device.name, sizeof(device.name), "fakedev0");
    vctx.sz = sizeof(vctx);
    vctx.priv = reinterpret_cast<verbs_ex_private*>(slots);
    vctx.context.device = &device;
    vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    vctx.context.ops.post_send = fake_post_send;
    vctx.context.ops.post_recv = fake_post_recv;
    vctx.context.ops.poll_cq = fake_poll_cq;
    return &vctx.context;
}

int fake_provider(bool sync) {
    int n = -1;
    ibv_device** list = ibv_get_device_list(&n);
    std::printf("{\"devices\":%d}\n", list ? n : -1);
    if (list) ibv_free_device_list(list);
    ibv_context* ctx = fake_context();

    ibv_pd* pd = ibv_alloc_pd(ctx);
    if (pd != g_fake_object) die("ibv_alloc_pd through the fake provider");
    auto* obj = static_cast<uint8_t*>(g_fake_object);
    std::memcpy(obj + offsetof(ibv_mr, lkey), &kFakeLkey, 4);
    std::memcpy(obj + offsetof(ibv_mr, rkey), &kFakeRkey, 4);
    std::memcpy(obj + offsetof(ibv_qp, qp_num), &kFakeQpn, 4);
    static uint8_t region[8192];
    ibv_mr* mr = reg(pd, region, sizeof(region), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ibv_qp_init_attr init{};
    init.qp_type = IBV_QPT_RC;
    ibv_qp* qp = ibv_create_qp(pd, &init);
    if (!qp) die("ibv_create_qp through the fake provider");
    truth("{\"what\":\"qp\",\"qpn\":" + std::to_string(qp->qp_num) + "}");
    Endpoint peer;  // only its QPN and GID are used: the address vector of RTR
    peer.qp = qp;
    const uint8_t peer_gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
    std::memcpy(peer.gid.raw, peer_gid, 16);
    Endpoint self;
    self.qp = qp;
    connect(self, peer, /*rq_psn=*/777, /*sq_psn=*/888);
    phase("setup", sync);

    ibv_sge sge{reinterpret_cast<uint64_t>(region), 4096, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 42;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = 0x10000;
    wr.wr.rdma.rkey = 0x3333;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(qp, &wr, &bad)) die("ibv_post_send");
    truth(
        "{\"what\":\"send\",\"qpn\":" + std::to_string(kFakeQpn) +
        ",\"wr_id\":42,\"opcode\":0,\"len\":4096,\"remote_addr\":65536,\"rkey\":13107,\"imm\":0}");
    ibv_recv_wr rwr{};
    rwr.wr_id = 43;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    ibv_recv_wr* rbad = nullptr;
    if (ibv_post_recv(qp, &rwr, &rbad)) die("ibv_post_recv");
    truth("{\"what\":\"recv\",\"qpn\":" + std::to_string(kFakeQpn) + ",\"wr_id\":43,\"len\":4096}");
    ibv_cq cq{};
    cq.context = ctx;
    ibv_wc wc;
    if (ibv_poll_cq(&cq, 1, &wc) != 1) die("ibv_poll_cq");
    truth("{\"what\":\"wc\",\"qpn\":" + std::to_string(wc.qp_num) +
          ",\"wr_id\":77,\"status\":0,"
          "\"opcode\":1,\"byte_len\":4096}");
    phase("data", false);

    if (ibv_destroy_qp(qp)) die("ibv_destroy_qp");
    truth("{\"what\":\"destroy_qp\",\"qpn\":" + std::to_string(kFakeQpn) + "}");
    if (ibv_dereg_mr(mr)) die("ibv_dereg_mr");
    truth("{\"what\":\"dereg_mr\",\"rkey\":" + std::to_string(kFakeRkey) + "}");
    phase("done", false);
    return 0;
}

// Cost of a probe on an ordinary function entry (no NOP to optimise): the fake provider's
// post_send and poll_cq, as a stripped provider like mlx5 would be probed. The context is
// revealed to the tracer by one ibv_alloc_pd; "ready" waits for its data-path attach.
int bench_fake(long n, bool sync) {
    ibv_context* ctx = fake_context();
    ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd) die("ibv_alloc_pd");
    std::memcpy(static_cast<uint8_t*>(g_fake_object) + offsetof(ibv_qp, qp_num), &kFakeQpn, 4);
    auto* qp = static_cast<ibv_qp*>(g_fake_object);
    phase("setup", sync);
    static uint8_t region[64];
    ibv_sge sge{reinterpret_cast<uint64_t>(region), sizeof(region), 1};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    time_calls("fake post_send", n, [&](long i) {
        wr.wr_id = static_cast<uint64_t>(i);
        ibv_send_wr* bad = nullptr;
        ibv_post_send(qp, &wr, &bad);
    });
    ibv_recv_wr rwr{};
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    time_calls("fake post_recv (nop5 entry)", n, [&](long i) {
        rwr.wr_id = static_cast<uint64_t>(i);
        ibv_recv_wr* bad = nullptr;
        ibv_post_recv(qp, &rwr, &bad);
    });
    ibv_cq cq{};
    cq.context = ctx;
    ibv_wc wc;
    time_calls("fake poll_cq(1 completion)", n, [&](long) { ibv_poll_cq(&cq, 1, &wc); });
    // num_entries 0: the provider returns nothing - an empty poll, probed all the same.
    time_calls("fake poll_cq(empty)", n, [&](long) { ibv_poll_cq(&cq, 0, &wc); });
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "devices") {
        int n = -1;
        ibv_device** list = ibv_get_device_list(&n);
        std::printf("{\"devices\":%d}\n", list ? n : -1);
        if (list) ibv_free_device_list(list);
        return 0;
    }
    if (mode == "run") {
        int ops = 4;
        bool sync = false;
        for (int i = 2; i < argc; i++) {
            if (std::strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
                ops = std::atoi(argv[++i]);
            else if (std::strcmp(argv[i], "--sync") == 0)
                sync = true;
        }
        if (ops < 1 || ops > 32) {
            std::fprintf(stderr, "verbs_workload: --ops 1..32\n");
            return 2;
        }
        return run(ops, sync);
    }
    if (mode == "fake-provider")
        return fake_provider(argc > 2 && std::strcmp(argv[2], "--sync") == 0);
    if (mode == "bench-fake" && argc > 2)
        return bench_fake(std::atol(argv[2]), argc > 3 && std::strcmp(argv[3], "--sync") == 0);
    if (mode == "bench-sv" && argc > 2)
        return bench_sv(std::atol(argv[2]), argc > 3 && std::strcmp(argv[3], "--sync") == 0);
    if (mode == "spin") return spin();
    if (mode == "post-exit") return post_exit(argc > 2 && std::strcmp(argv[2], "--sync") == 0);
    if (mode == "idle-post") return idle_post(argc > 2 && std::strcmp(argv[2], "--sync") == 0);
    if (mode == "mr-loop" && argc > 2) return mr_loop(std::atol(argv[2]));
    if (mode == "churn" && argc > 2) {
        int pairs = 4, ops = 16;
        for (int i = 3; i + 1 < argc; i += 2) {
            if (std::strcmp(argv[i], "--pairs") == 0)
                pairs = std::atoi(argv[i + 1]);
            else if (std::strcmp(argv[i], "--ops") == 0)
                ops = std::atoi(argv[i + 1]);
        }
        const double seconds = std::atof(argv[2]);
        if (!(seconds > 0) || pairs < 1 || pairs > 64 || ops < 1 || ops > 32) {
            std::fprintf(stderr, "verbs_workload: churn SECONDS [--pairs 1..64] [--ops 1..32]\n");
            return 2;
        }
        return churn(seconds, pairs, ops);
    }
    if (mode.starts_with("bench-") && argc > 2) return bench(mode, std::atol(argv[2]));
    std::fprintf(
        stderr,
        "usage: verbs_workload devices|run [--ops N] [--sync]|spin|mr-loop N|churn SECONDS "
        "[--pairs N] [--ops N]|bench-reg N|bench-post N|bench-poll N\n");
    return 2;
}
