#include "dataplane/common/record_fields.hpp"

namespace insert::records {

namespace {

// Short names for the columns, so that a field stays one line.
constexpr FieldType kInt = FieldType::integer;
constexpr FieldType kReal = FieldType::number;
constexpr FieldType kText = FieldType::string;
constexpr FieldType kBool = FieldType::boolean;
constexpr FieldType kObject = FieldType::object;
constexpr FieldType kTexts = FieldType::strings;
constexpr FieldType kInts = FieldType::integers;
constexpr FieldType kObjects = FieldType::objects;
constexpr Presence kAlways = Presence::always;
constexpr Presence kNull = Presence::nullable;
constexpr Presence kCond = Presence::conditional;
constexpr Presence kCondNull = Presence::conditional_null;

// clang-format off
// ---- insert-dp (SPEC.md 7; docs/semantics.md) --------------------------------------------

constexpr RecordField kMsg[] = {
    {"type", kText, "name", kAlways, "\"msg\""},
    {"src_ip", kText, "IP address", kAlways, "the requester's address (source IP of the request packets)"},
    {"dst_ip", kText, "IP address", kAlways, "the responder's address: the endpoint the requests go to"},
    {"dst_qpn", kInt, "QPN", kAlways, "the responder's QP (BTH DestQP of the requests)"},
    {"src_qpn", kInt, "QPN", kNull, "the requester's QP: the paired peer endpoint's QPN; null while unpaired"},
    {"op", kText, "name", kAlways, "SEND, WRITE, READ, CMP_SWAP or FETCH_ADD"},
    {"imm", kInt, "", kNull, "immediate data of the Last/Only packet; null without"},
    {"inv", kInt, "key", kNull, "the R_Key a SEND with invalidate names (IETH); null otherwise"},
    {"psn_first", kInt, "PSN", kAlways, "PSN of the First/Only packet (READ, atomics: of the request)"},
    {"psn_last", kInt, "PSN", kAlways, "PSN of the Last/Only packet (READ: of its last response; SPEC 5)"},
    {"pkts", kInt, "count", kAlways, "distinct PSNs of the message observed (READ: of its responses)"},
    {"bytes", kInt, "bytes", kAlways, "payload of those packets (READ: of the responses; atomics 0)"},
    {"va", kInt, "address", kNull, "virtual address of the RETH or AtomicETH; null for SEND"},
    {"rkey", kInt, "key", kNull, "R_Key of the RETH or AtomicETH; null for SEND"},
    {"dma_len", kInt, "bytes", kNull, "DMA length of the RETH; null for SEND and atomics"},
    {"t_first_ns", kInt, "ns", kAlways, "first observation of any packet of the message (observer clock)"},
    {"t_last_ns", kInt, "ns", kAlways, "latest observation of a packet of it, up to its freeze"},
    {"t_ack_ns", kInt, "ns", kNull, "the response that completed it (SPEC 5); null when none did (always for UC)"},
    {"latency_ns", kInt, "ns", kNull, "t_ack_ns - t_first_ns, the message's wire latency; null without t_ack_ns"},
    {"retx_pkts", kInt, "count", kAlways, "packets of the message seen again (duplicates: retransmissions)"},
    {"naks", kInt, "count", kAlways, "NAKs with a PSN in [psn_first, psn_last]"},
    {"rnr_naks", kInt, "count", kAlways, "RNR NAKs with a PSN in [psn_first, psn_last]"},
    {"status", kText, "name", kAlways, "ok; fatal NAK: nak_inv, nak_access, nak_op; never completed: nak_seq, nak_rnr (the latest such NAK), incomplete"},
    {"src_mac", kText, "MAC address", kAlways, "Ethernet source of the packet that opened the message (its First/Only, READ request or atomic; the first observed)"},
    {"ttl", kInt, "hops", kAlways, "IPv4 TTL / IPv6 hop limit of that packet"},
    {"port", kInt, "port id", kNull, "the DPDK port that packet arrived on (inline, monitor); null in replay (a capture has no port)"},
};

constexpr RecordField kQp[] = {
    {"type", kText, "name", kAlways, "\"qp\""},
    {"ip", kText, "IP address", kAlways, "the endpoint's address (packets are sent to it)"},
    {"qpn", kInt, "QPN", kAlways, "the endpoint's QP number"},
    {"peer_ip", kText, "IP address", kNull, "the paired endpoint's address; null while unpaired"},
    {"peer_qpn", kInt, "QPN", kNull, "the paired endpoint's QPN; null while unpaired"},
    {"pair_by", kText, "name", kNull, "the rule that paired it: host, cm, sport, ip or psn (SPEC 3); null while unpaired"},
    {"transport", kText, "name", kNull, "RC, UC, UD or XRC: the family of its first non-CNP packet; null after CNPs only"},
    {"pkts", kInt, "count", kAlways, "well-formed RoCE packets to it (retransmissions, responses, CNPs, MADs included)"},
    {"bytes", kInt, "bytes", kAlways, "their payload_len"},
    {"msgs", kObject, "", kAlways, "msg records with this endpoint as destination, by op"},
    {"msgs.SEND", kInt, "count", kAlways, "SEND messages"},
    {"msgs.WRITE", kInt, "count", kAlways, "WRITE messages"},
    {"msgs.READ", kInt, "count", kAlways, "READ messages"},
    {"msgs.CMP_SWAP", kInt, "count", kAlways, "compare-and-swap messages"},
    {"msgs.FETCH_ADD", kInt, "count", kAlways, "fetch-and-add messages"},
    {"dup_pkts", kInt, "count", kAlways, "request packets already seen (SPEC 4 dup)"},
    {"ooo_pkts", kInt, "count", kAlways, "request packets older than the newest, not seen before (SPEC 4 late: reordered, or resent after a loss before the observer)"},
    {"gaps", kInt, "count", kAlways, "jumps in the request PSNs (cumulative)"},
    {"missing", kInt, "PSNs", kAlways, "PSNs those jumps skipped (cumulative: a late packet does not reduce it)"},
    {"naks", kObject, "", kAlways, "NAKs received by the endpoint (a requester), by code"},
    {"naks.seq", kInt, "count", kAlways, "PSN sequence error NAKs"},
    {"naks.rnr", kInt, "count", kAlways, "RNR NAKs"},
    {"naks.inv", kInt, "count", kAlways, "invalid request NAKs"},
    {"naks.access", kInt, "count", kAlways, "remote access error NAKs"},
    {"naks.op", kInt, "count", kAlways, "remote operational error NAKs"},
    {"cnps", kInt, "count", kAlways, "CNPs received (they go to the sender that should slow down)"},
    {"ecn_ce", kInt, "count", kAlways, "packets received with IP ECN = 11 (congestion experienced)"},
    {"t_first_ns", kInt, "ns", kAlways, "its first packet"},
    {"t_last_ns", kInt, "ns", kAlways, "its latest packet"},
    {"lat_p50_ns", kInt, "ns", kNull, "median latency_ns of the messages to it (nearest rank, within 1%); null without latencies"},
    {"lat_p99_ns", kInt, "ns", kNull, "99th percentile of the same (nearest rank, within 1%); null without latencies"},
    {"lat_max_ns", kInt, "ns", kNull, "largest latency_ns of the same (exact); null without latencies"},
    {"final", kBool, "", kAlways, "true: the endpoint part's last record (end of input, idle eviction); false: a periodic one (--interval)"},
};

constexpr RecordField kEvent[] = {
    {"type", kText, "name", kAlways, "\"event\""},
    {"kind", kText, "name", kAlways, "gap, nak, rnr_nak, fatal_nak, cnp, timeout (a message frozen by idle eviction), unknown_qp (a response to an endpoint with no peer), pair"},
    {"ip", kText, "IP address", kAlways, "the destination endpoint's address"},
    {"qpn", kInt, "QPN", kAlways, "the destination endpoint's QP number"},
    {"t_ns", kInt, "ns", kAlways, "the window's first event (pair: when it was paired)"},
    {"psn", kInt, "PSN", kAlways, "the first event's PSN (gap: the one after the gap; timeout: the message's psn_first)"},
    {"missing", kInt, "PSNs", kAlways, "PSNs the window's gaps skipped, summed", "kind=gap"},
    {"syndrome", kInt, "", kAlways, "the AETH syndrome byte of the first NAK", "kind=nak|rnr_nak|fatal_nak"},
    {"count", kInt, "count", kAlways, "events of this kind to the endpoint in the window (docs/semantics.md \"Events\")", "kind=gap|nak|rnr_nak|fatal_nak|cnp|timeout|unknown_qp"},
    {"sources", kInt, "count", kAlways, "their distinct source IPs", "kind=gap|nak|rnr_nak|fatal_nak|cnp|timeout|unknown_qp"},
    {"sources_exact", kBool, "", kAlways, "true: sources is exact (up to 20); false: a HyperLogLog estimate (within 20%)", "kind=gap|nak|rnr_nak|fatal_nak|cnp|timeout|unknown_qp"},
    {"t_last_ns", kInt, "ns", kAlways, "the window's last event", "kind=gap|nak|rnr_nak|fatal_nak|cnp|timeout|unknown_qp"},
    {"window_ns", kInt, "ns", kAlways, "the window's start: one-second windows of packet time (timeout: of the part's idle deadline, last packet + --idle-timeout)", "kind=gap|nak|rnr_nak|fatal_nak|cnp|timeout|unknown_qp"},
    {"peer_ip", kText, "IP address", kAlways, "the peer endpoint's address", "kind=pair"},
    {"peer_qpn", kInt, "QPN", kAlways, "the peer endpoint's QP number", "kind=pair"},
    {"pair_by", kText, "name", kAlways, "the rule that paired them: host, cm, sport, ip or psn", "kind=pair"},
};

constexpr RecordField kDpSummary[] = {
    {"type", kText, "name", kAlways, "\"summary\""},
    {"schema", kText, "version", kAlways, "the records' schema version (this page's), MAJOR.MINOR"},
    {"pkts", kInt, "count", kAlways, "every frame read: roce_pkts + non_roce_pkts + the malformed counts"},
    {"roce_pkts", kInt, "count", kAlways, "well-formed RoCEv2 packets"},
    {"non_roce_pkts", kInt, "count", kAlways, "frames that are not RoCEv2 (other protocols and ports, IP fragments)"},
    {"malformed", kObject, "", kAlways, "RoCE packets that cannot be trusted, by reason (SPEC 1)"},
    {"malformed.length_mismatch", kInt, "count", kAlways, "IP total length beyond the frame, or UDP length unlike the IP payload's"},
    {"malformed.truncated", kInt, "count", kAlways, "too short for their BTH or extension headers"},
    {"malformed.reserved_opcode", kInt, "count", kAlways, "a reserved BTH opcode"},
    {"endpoints", kInt, "count", kAlways, "distinct endpoints (ip, qpn) with a final qp record"},
    {"connections", kInt, "count", kAlways, "pairs of endpoint parts paired"},
    {"msgs", kInt, "count", kAlways, "msg records written"},
    {"table_full", kObject, "", kAlways, "what a full endpoint table refused (docs/semantics.md \"Table full\")"},
    {"table_full.pkts", kInt, "count", kAlways, "packets whose endpoint found no room"},
    {"table_full.endpoints", kInt, "count", kAlways, "distinct endpoints that got no room (estimated)"},
    {"unix", kObject, "", kCond, "with --records unix:PATH only: the connection to insert-correlate"},
    {"unix.connects", kInt, "count", kCond, "connections made to the collector"},
    {"unix.dropped", kInt, "count", kCond, "records dropped while it was away or behind"},
    {"interrupted", kBool, "", kAlways, "a signal cut the run short"},
    {"signal", kText, "name", kNull, "that signal (SIGINT, SIGTERM, ...); null when the run reached its end"},
    {"wall_s", kReal, "s", kAlways, "wall-clock time of the run"},
    {"mpps", kReal, "Mpps", kAlways, "frames per second of wall time, in millions"},
};

// ---- insert-trace (docs/insert-trace.md) -------------------------------------------------

constexpr RecordField kTraceStart[] = {
    {"type", kText, "name", kAlways, "\"trace_start\": written once every initial probe is attached"},
    {"schema", kText, "version", kAlways, "the records' schema version (this page's), MAJOR.MINOR"},
    {"t_ns", kInt, "ns", kAlways, "CLOCK_MONOTONIC when it was written"},
    {"wall_offset_ns", kInt, "ns", kAlways, "CLOCK_REALTIME - CLOCK_MONOTONIC at the start: wall_ns = t_ns + this"},
    {"datapath", kText, "name", kAlways, "--datapath: all, off or sample:N"},
    {"sites", kText, "name", kAlways, "--sites: auto (softverbs' trace sites where they exist) or off"},
    {"ringbuf_bytes", kInt, "bytes", kAlways, "the BPF ring buffer's size"},
    {"pid", kInt, "id", kNull, "--pid filter; null: every process"},
    {"comm", kText, "text", kNull, "--comm filter; null: any"},
    {"cgroup", kInt, "id", kNull, "--cgroup filter (cgroup v2 id); null: any"},
    {"netns", kText, "text", kNull, "--netns filter; null: every network namespace"},
    {"probes", kInt, "count", kAlways, "probes attached"},
    {"host", kText, "text", kAlways, "--host (default: the hostname): the clock domain every record of this tracer belongs to"},
};

constexpr RecordField kVerb[] = {
    {"type", kText, "name", kAlways, "\"verb\""},
    {"verb", kText, "name", kAlways, "the verb called (the sections below)"},
    {"t_ns", kInt, "ns", kAlways, "CLOCK_MONOTONIC at the probe (softverbs' data-path verbs: read at the verb)"},
    {"wall_ns", kInt, "ns", kAlways, "t_ns + trace_start's wall_offset_ns: the host's wall clock"},
    {"pid", kInt, "id", kAlways, "process id (tgid)"},
    {"tid", kInt, "id", kAlways, "thread id"},
    {"comm", kText, "text", kAlways, "the process's command name (escaped; invalid UTF-8 as U+FFFD)"},
    {"cgroup", kInt, "id", kAlways, "cgroup v2 id (the inode of the process's cgroup directory)"},
    {"ip", kText, "IP address", kNull, "the host's RDMA address, from the GID of the context or QP; null when not known yet"},
    {"ctx", kText, "hex pointer", kAlways, "the verbs context"},
    {"device", kText, "text", kAlways, "the device's name", "verb=open_device"},
    {"ret", kInt, "", kAlways, "0, or -1 when the verb returned NULL", "verb=open_device"},
    {"port", kInt, "", kAlways, "port number", "verb=query_gid"},
    {"index", kInt, "", kAlways, "GID index", "verb=query_gid"},
    {"ret", kInt, "", kAlways, "the verb's return value (0: success)", "verb=query_gid"},
    {"gid", kText, "IPv6 text", kNull, "the GID; null when the verb failed", "verb=query_gid"},
    {"gid_ip", kText, "IP address", kNull, "the address the GID holds; null for the zero GID or a failure", "verb=query_gid"},
    {"pd", kText, "hex pointer", kAlways, "the protection domain (0x0: failed)", "verb=alloc_pd"},
    {"ret", kInt, "", kAlways, "0, or -1 when the verb returned NULL", "verb=alloc_pd"},
    {"cq", kText, "hex pointer", kAlways, "the completion queue (0x0: failed)", "verb=create_cq"},
    {"cqe", kInt, "count", kAlways, "completion queue entries asked for", "verb=create_cq"},
    {"ret", kInt, "", kAlways, "0, or -1 when the verb returned NULL", "verb=create_cq"},
    {"qp", kText, "hex pointer", kAlways, "the QP (0x0: failed)", "verb=create_qp"},
    {"qpn", kInt, "QPN", kNull, "its QP number; null when the verb failed", "verb=create_qp"},
    {"qp_type", kText, "name", kNull, "RC, UC, UD, XRC_SEND, XRC_RECV, RAW_PACKET or DRIVER; null when the verb failed", "verb=create_qp"},
    {"pd", kText, "hex pointer", kAlways, "its protection domain", "verb=create_qp"},
    {"send_cq", kText, "hex pointer", kAlways, "its send completion queue", "verb=create_qp"},
    {"recv_cq", kText, "hex pointer", kAlways, "its receive completion queue", "verb=create_qp"},
    {"ret", kInt, "", kAlways, "0, or -1 when the verb returned NULL", "verb=create_qp"},
    {"qp", kText, "hex pointer", kAlways, "the QP", "verb=modify_qp"},
    {"qpn", kInt, "QPN", kAlways, "its QP number", "verb=modify_qp"},
    {"attr_mask", kInt, "flags", kAlways, "ibv_qp_attr_mask: which attributes the call sets (the fields below that follow it)", "verb=modify_qp"},
    {"from_state", kText, "name", kAlways, "the QP's state before: RESET, INIT, RTR, RTS, SQD, SQE, ERR or UNKNOWN", "verb=modify_qp"},
    {"state", kText, "name", kNull, "the state it moves to; null when the mask does not set one", "verb=modify_qp"},
    {"path_mtu", kInt, "bytes", kCondNull, "path MTU (mask IBV_QP_PATH_MTU); null for a value outside the enum", "verb=modify_qp"},
    {"dest_qpn", kInt, "QPN", kCond, "the peer's QP number (mask IBV_QP_DEST_QPN)", "verb=modify_qp"},
    {"rq_psn", kInt, "PSN", kCond, "receive queue PSN (IBV_QP_RQ_PSN)", "verb=modify_qp"},
    {"sq_psn", kInt, "PSN", kCond, "send queue PSN (IBV_QP_SQ_PSN)", "verb=modify_qp"},
    {"port", kInt, "", kCond, "port number (IBV_QP_PORT)", "verb=modify_qp"},
    {"pkey_index", kInt, "", kCond, "P_Key index (IBV_QP_PKEY_INDEX)", "verb=modify_qp"},
    {"qkey", kInt, "key", kCond, "Q_Key (IBV_QP_QKEY)", "verb=modify_qp"},
    {"qp_access", kTexts, "names", kCond, "remote rights the QP allows, e.g. REMOTE_WRITE (IBV_QP_ACCESS_FLAGS)", "verb=modify_qp"},
    {"dlid", kInt, "", kCond, "destination LID (IBV_QP_AV)", "verb=modify_qp"},
    {"is_global", kBool, "", kCond, "the address vector has a GRH (IBV_QP_AV)", "verb=modify_qp"},
    {"peer_gid", kText, "IPv6 text", kCond, "the peer's GID (IBV_QP_AV with a GRH)", "verb=modify_qp"},
    {"peer_ip", kText, "IP address", kCondNull, "the address the peer's GID holds (IBV_QP_AV with a GRH); null for the zero GID", "verb=modify_qp"},
    {"sgid_index", kInt, "", kCond, "the local GID index (IBV_QP_AV with a GRH)", "verb=modify_qp"},
    {"hop_limit", kInt, "", kCond, "GRH hop limit (IBV_QP_AV with a GRH)", "verb=modify_qp"},
    {"traffic_class", kInt, "", kCond, "GRH traffic class (IBV_QP_AV with a GRH)", "verb=modify_qp"},
    {"timeout", kInt, "", kCond, "local ACK timeout exponent (IBV_QP_TIMEOUT)", "verb=modify_qp"},
    {"retry_cnt", kInt, "count", kCond, "retries before an error (IBV_QP_RETRY_CNT)", "verb=modify_qp"},
    {"rnr_retry", kInt, "count", kCond, "RNR retries (IBV_QP_RNR_RETRY)", "verb=modify_qp"},
    {"min_rnr_timer", kInt, "", kCond, "minimum RNR NAK timer code (IBV_QP_MIN_RNR_TIMER)", "verb=modify_qp"},
    {"max_rd_atomic", kInt, "count", kCond, "outstanding READs/atomics as requester (IBV_QP_MAX_QP_RD_ATOMIC)", "verb=modify_qp"},
    {"max_dest_rd_atomic", kInt, "count", kCond, "outstanding READs/atomics as responder (IBV_QP_MAX_DEST_RD_ATOMIC)", "verb=modify_qp"},
    {"ret", kInt, "", kAlways, "the verb's return value (0: success)", "verb=modify_qp"},
    {"qp", kText, "hex pointer", kAlways, "the QP", "verb=destroy_qp"},
    {"qpn", kInt, "QPN", kAlways, "its QP number", "verb=destroy_qp"},
    {"mr", kText, "hex pointer", kAlways, "the memory region (0x0: failed)", "verb=reg_mr"},
    {"addr", kInt, "address", kAlways, "its start in the process", "verb=reg_mr"},
    {"length", kInt, "bytes", kAlways, "its length", "verb=reg_mr"},
    {"lkey", kInt, "key", kNull, "its local key; null when the verb failed", "verb=reg_mr"},
    {"rkey", kInt, "key", kNull, "its remote key; null when the verb failed", "verb=reg_mr"},
    {"pd", kText, "hex pointer", kAlways, "its protection domain", "verb=reg_mr"},
    {"iova", kInt, "address", kAlways, "the address remote peers use (addr for ibv_reg_mr)", "verb=reg_mr"},
    {"access", kInt, "flags", kAlways, "ibv_access_flags as a number", "verb=reg_mr"},
    {"access_flags", kTexts, "names", kAlways, "the same as names: LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC, ...", "verb=reg_mr"},
    {"ret", kInt, "", kAlways, "0, or -1 when the verb returned NULL", "verb=reg_mr"},
    {"mr", kText, "hex pointer", kAlways, "the memory region", "verb=dereg_mr"},
    {"addr", kInt, "address", kAlways, "its start in the process", "verb=dereg_mr"},
    {"length", kInt, "bytes", kAlways, "its length", "verb=dereg_mr"},
    {"lkey", kInt, "key", kAlways, "its local key", "verb=dereg_mr"},
    {"rkey", kInt, "key", kAlways, "its remote key", "verb=dereg_mr"},
    {"qp", kText, "hex pointer", kAlways, "the QP", "verb=post_send"},
    {"qpn", kInt, "QPN", kAlways, "its QP number", "verb=post_send"},
    {"wr_id", kInt, "id", kAlways, "the work request's id (the application's)", "verb=post_send"},
    {"opcode", kText, "name", kAlways, "RDMA_WRITE, RDMA_WRITE_WITH_IMM, SEND, SEND_WITH_IMM, RDMA_READ, ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD, ...", "verb=post_send"},
    {"send_flags", kInt, "flags", kAlways, "ibv_send_flags", "verb=post_send"},
    {"signaled", kBool, "", kAlways, "IBV_SEND_SIGNALED: it has a completion of its own", "verb=post_send"},
    {"num_sge", kInt, "count", kAlways, "scatter/gather elements", "verb=post_send"},
    {"len", kInt, "bytes", kAlways, "the sum of their lengths", "verb=post_send"},
    {"remote_addr", kInt, "address", kNull, "the remote address; null for SEND", "verb=post_send"},
    {"rkey", kInt, "key", kNull, "the remote key; null for SEND", "verb=post_send"},
    {"imm", kInt, "", kNull, "immediate data (host order); null without", "verb=post_send"},
    {"chain_index", kInt, "", kAlways, "its position in the posted wr->next chain (0: the first)", "verb=post_send"},
    {"truncated", kBool, "", kAlways, "the chain or SGE list went on beyond what the probe reads", "verb=post_send"},
    {"qp", kText, "hex pointer", kAlways, "the QP", "verb=post_recv"},
    {"qpn", kInt, "QPN", kAlways, "its QP number", "verb=post_recv"},
    {"wr_id", kInt, "id", kAlways, "the work request's id", "verb=post_recv"},
    {"num_sge", kInt, "count", kAlways, "scatter/gather elements", "verb=post_recv"},
    {"len", kInt, "bytes", kAlways, "the sum of their lengths", "verb=post_recv"},
    {"chain_index", kInt, "", kAlways, "its position in the posted chain (0: the first)", "verb=post_recv"},
    {"truncated", kBool, "", kAlways, "the chain or SGE list went on beyond what the probe reads", "verb=post_recv"},
    {"cq", kText, "hex pointer", kAlways, "the completion queue polled", "verb=poll_cq"},
    {"qpn", kInt, "QPN", kAlways, "the completion's QP", "verb=poll_cq"},
    {"wr_id", kInt, "id", kAlways, "the completed work request's id", "verb=poll_cq"},
    {"status", kText, "name", kAlways, "SUCCESS, REM_ACCESS_ERR, ... (ibv_wc_status)", "verb=poll_cq"},
    {"status_code", kInt, "", kAlways, "the same as a number", "verb=poll_cq"},
    {"opcode", kText, "name", kAlways, "SEND, RDMA_WRITE, RDMA_READ, COMP_SWAP, FETCH_ADD, RECV, RECV_RDMA_WITH_IMM, ...", "verb=poll_cq"},
    {"byte_len", kInt, "bytes", kAlways, "bytes received (receive completions)", "verb=poll_cq"},
    {"imm", kInt, "", kNull, "immediate data (host order); null without", "verb=poll_cq"},
    {"src_qp", kInt, "QPN", kAlways, "the remote QP (UD receive completions)", "verb=poll_cq"},
    {"wc_flags", kInt, "flags", kAlways, "ibv_wc_flags", "verb=poll_cq"},
    {"index", kInt, "", kAlways, "its position in the poll's batch (0: the first)", "verb=poll_cq"},
    {"polled", kInt, "count", kAlways, "completions the poll returned", "verb=poll_cq"},
    {"host", kText, "text", kAlways, "trace_start's host"},
};

constexpr RecordField kAttach[] = {
    {"type", kText, "name", kAlways, "\"attach\""},
    {"what", kText, "name", kAlways, "control (a libibverbs copy's exported verbs) or ops (a context's data-path functions)"},
    {"t_ns", kInt, "ns", kAlways, "CLOCK_MONOTONIC when it was written"},
    {"lib", kText, "path", kAlways, "the library probed", "what=control"},
    {"pid", kInt, "id", kAlways, "the process the probes are for; -1: every process", "what=control"},
    {"seen_in_pid", kInt, "id", kNull, "the process a scan found the library in; null: named on the command line", "what=control"},
    {"symbols", kObject, "", kAlways, "verbs probed: name -> file offset", "what=control"},
    {"symbols.*", kInt, "bytes", kCond, "the verb's offset in the library file", "what=control"},
    {"sites", kObject, "", kAlways, "softverbs trace sites probed: name -> file offset (empty without)", "what=control"},
    {"sites.*", kInt, "bytes", kCond, "the site's offset in the library file", "what=control"},
    {"pid", kInt, "id", kAlways, "the process whose context it is", "what=ops"},
    {"ctx", kText, "hex pointer", kAlways, "the context whose ops table was read", "what=ops"},
    {"functions", kObject, "", kAlways, "post_send, post_recv, poll_cq, create_qp_ex: where each was found", "what=ops"},
    {"functions.*", kObject, "", kCond, "one function: file, offset, new and probe, or error", "what=ops"},
    {"functions.*.file", kText, "path", kCond, "the file it lives in (probed)", "what=ops"},
    {"functions.*.offset", kInt, "bytes", kCond, "its offset in that file (probed)", "what=ops"},
    {"functions.*.new", kBool, "", kCond, "a probe was attached for it now (false: one was there already)", "what=ops"},
    {"functions.*.probe", kText, "name", kCond, "entry (a probe on the function) or site (the file's trace site reports it)", "what=ops"},
    {"functions.*.error", kText, "text", kCond, "why it could not be probed", "what=ops"},
    {"host", kText, "text", kAlways, "trace_start's host"},
};

constexpr RecordField kLost[] = {
    {"type", kText, "name", kAlways, "\"lost\""},
    {"t_ns", kInt, "ns", kAlways, "CLOCK_MONOTONIC when the loss was seen"},
    {"wall_ns", kInt, "ns", kAlways, "the same on the host's wall clock"},
    {"ringbuf_drops", kInt, "count", kAlways, "records the full ring buffer dropped since the previous lost record"},
    {"ringbuf_drops_total", kInt, "count", kAlways, "the same since the start"},
    {"host", kText, "text", kAlways, "trace_start's host"},
};

constexpr RecordField kProcessExit[] = {
    {"type", kText, "name", kAlways, "\"process_exit\""},
    {"t_ns", kInt, "ns", kAlways, "CLOCK_MONOTONIC when the exit was found"},
    {"wall_ns", kInt, "ns", kAlways, "the same on the host's wall clock"},
    {"pid", kInt, "id", kAlways, "the process"},
    {"comm", kText, "text", kAlways, "its command name"},
    {"open_qps", kInt, "count", kAlways, "QPs it had not destroyed"},
    {"open_mrs", kInt, "count", kAlways, "memory regions it had not deregistered"},
    {"host", kText, "text", kAlways, "trace_start's host"},
};

constexpr RecordField kTraceCgroup[] = {
    {"type", kText, "name", kAlways, "\"cgroup\""},
    {"t_ns", kInt, "ns", kAlways, "CLOCK_MONOTONIC of the first event seen from the cgroup"},
    {"wall_ns", kInt, "ns", kAlways, "the same on the host's wall clock"},
    {"id", kInt, "id", kAlways, "the cgroup v2 id (inode of its directory), as verb records' cgroup"},
    {"path", kText, "path", kNull, "its path under the cgroup2 mount (\"/\" the root); null if it was gone before it was looked up"},
    {"host", kText, "text", kAlways, "trace_start's host"},
};

constexpr RecordField kTraceTick[] = {
    {"type", kText, "name", kAlways, "\"tick\""},
    {"t_ns", kInt, "ns", kAlways, "CLOCK_MONOTONIC now"},
    {"wall_ns", kInt, "ns", kAlways, "the same on the host's wall clock: what a live correlator's time moves on by"},
    {"host", kText, "text", kAlways, "trace_start's host"},
};

constexpr RecordField kCorrelateCgroup[] = {
    {"type", kText, "name", kAlways, "\"cgroup\""},
    {"host", kText, "text", kAlways, "the host whose tracer named the cgroup"},
    {"id", kInt, "id", kAlways, "the cgroup v2 id, as in e2e, app, alert and congestion records"},
    {"path", kText, "path", kNull, "its path (the tenant's name); null if the tracer found none"},
};

constexpr RecordField kTraceStats[] = {
    {"type", kText, "name", kAlways, "\"trace_stats\""},
    {"final", kBool, "", kAlways, "true: written at the stop"},
    {"t_ns", kInt, "ns", kAlways, "CLOCK_MONOTONIC when it was written"},
    {"events", kInt, "count", kAlways, "events read from the ring buffer"},
    {"ringbuf_drops", kInt, "count", kAlways, "records the full ring buffer dropped"},
    {"read_errors", kInt, "count", kAlways, "bpf_probe_read_user failures"},
    {"sampled_out", kInt, "count", kAlways, "data-path calls (or site records) left out by --datapath sample:N"},
    {"probes", kInt, "count", kAlways, "probes attached"},
    {"unix", kObject, "", kCond, "with --unix only: the connection to insert-correlate"},
    {"unix.connects", kInt, "count", kCond, "connections made to the collector (1 when never lost)"},
    {"unix.dropped", kInt, "count", kCond, "records it did not get (no room while it was away or behind, or cut by a lost connection)"},
    {"host", kText, "text", kAlways, "trace_start's host"},
};

// ---- insert-correlate (SPEC.md 10; docs/correlation.md 6, 8, 9) -------------------------

constexpr RecordField kE2e[] = {
    {"type", kText, "name", kAlways, "\"e2e\""},
    {"src_ip", kText, "IP address", kAlways, "the requester QP's address"},
    {"src_qpn", kInt, "QPN", kAlways, "the requester QP"},
    {"dst_ip", kText, "IP address", kAlways, "the responder's address"},
    {"dst_qpn", kInt, "QPN", kAlways, "the responder's QP"},
    {"op", kText, "name", kAlways, "SEND, WRITE, READ, CMP_SWAP or FETCH_ADD"},
    {"bytes", kInt, "bytes", kAlways, "the work request's len (what the application moved; atomics 8)"},
    {"psn_first", kInt, "PSN", kAlways, "the message's first PSN"},
    {"wr_id", kInt, "id", kAlways, "the work request's id"},
    {"pid", kInt, "id", kAlways, "the requester's process"},
    {"comm", kText, "text", kAlways, "its command name"},
    {"cgroup", kInt, "id", kAlways, "its cgroup v2 id"},
    {"peer_pid", kInt, "id", kNull, "the responder's process; null when untraced"},
    {"peer_comm", kText, "text", kNull, "its command name; null when untraced"},
    {"t_post_ns", kInt, "ns", kNull, "post_send, on the observer's clock (host time - the host's offset)"},
    {"t_first_ns", kInt, "ns", kAlways, "the message's first packet at the observer"},
    {"t_ack_ns", kInt, "ns", kNull, "the response that completed it at the observer; null when none"},
    {"t_poll_ns", kInt, "ns", kNull, "the poll_cq that returned its completion (observer clock); null when not traced, and for unsignaled requests"},
    {"host_ns", kInt, "ns", kNull, "t_first_ns - t_post_ns: post to first packet"},
    {"net_ns", kInt, "ns", kNull, "t_ack_ns - t_first_ns: the wire latency"},
    {"completion_ns", kInt, "ns", kNull, "t_poll_ns - t_ack_ns: acknowledgement to the application's poll; null for unsignaled requests"},
    {"total_ns", kInt, "ns", kNull, "poll - post on the host's clock (= host_ns + net_ns + completion_ns); null for unsignaled requests"},
    {"retx_pkts", kInt, "count", kAlways, "the message's retransmitted packets"},
    {"naks", kInt, "count", kAlways, "NAKs in its PSN range"},
    {"status", kText, "name", kAlways, "the msg's status (SPEC 5)"},
    {"match", kText, "name", kAlways, "exact (in order) or resync (after skipping unmatched items)"},
    {"host", kText, "text", kAlways, "the requester's host (insert-trace --host)"},
    {"peer_host", kText, "text", kNull, "the responder's host; null when untraced"},
    {"peer_cgroup", kInt, "id", kNull, "the responder's cgroup v2 id; null when untraced"},
    {"signaled", kBool, "", kAlways, "the work request asked for a completion of its own"},
    {"wc_status", kText, "name", kNull, "its completion's status (SUCCESS, ...); null without a traced poll"},
    {"t_recv_poll_ns", kInt, "ns", kNull, "SEND: the responder's receive completion (observer clock); null without"},
    {"t_covered_ns", kInt, "ns", kNull, "unsignaled requests: the poll of the signaled completion that covers it (information only); null for signaled ones or when not traced"},
};

constexpr RecordField kApp[] = {
    {"type", kText, "name", kAlways, "\"app\""},
    {"host", kText, "text", kAlways, "the application's host"},
    {"ip", kText, "IP address", kAlways, "its QPs' address"},
    {"pid", kInt, "id", kAlways, "its process"},
    {"comm", kText, "text", kAlways, "its command name"},
    {"cgroup", kInt, "id", kAlways, "its cgroup v2 id"},
    {"cgroup_path", kText, "path", kNull, "that cgroup's path (insert-trace's cgroup records); null when no tracer named it"},
    {"qps", kInt, "count", kAlways, "its requester QPs (incarnations) with a matched message"},
    {"msgs", kObject, "", kAlways, "its matched messages (e2e records as requester), by op"},
    {"msgs.SEND", kInt, "count", kAlways, "SEND messages"},
    {"msgs.WRITE", kInt, "count", kAlways, "WRITE messages"},
    {"msgs.READ", kInt, "count", kAlways, "READ messages"},
    {"msgs.CMP_SWAP", kInt, "count", kAlways, "compare-and-swap messages"},
    {"msgs.FETCH_ADD", kInt, "count", kAlways, "fetch-and-add messages"},
    {"bytes", kObject, "", kAlways, "their bytes (e2e bytes), by op"},
    {"bytes.SEND", kInt, "bytes", kAlways, "of SENDs"},
    {"bytes.WRITE", kInt, "bytes", kAlways, "of WRITEs"},
    {"bytes.READ", kInt, "bytes", kAlways, "of READs"},
    {"bytes.CMP_SWAP", kInt, "bytes", kAlways, "of compare-and-swaps"},
    {"bytes.FETCH_ADD", kInt, "bytes", kAlways, "of fetch-and-adds"},
    {"host_ns", kObject, "", kAlways, "host_ns of its e2e records: p50, p99, max"},
    {"host_ns.p50", kInt, "ns", kNull, "median (nearest rank, within 1%); null without values"},
    {"host_ns.p99", kInt, "ns", kNull, "99th percentile (nearest rank, within 1%); null without values"},
    {"host_ns.max", kInt, "ns", kNull, "largest (exact); null without values"},
    {"net_ns", kObject, "", kAlways, "net_ns of its e2e records: p50, p99, max"},
    {"net_ns.p50", kInt, "ns", kNull, "median; null without values"},
    {"net_ns.p99", kInt, "ns", kNull, "99th percentile; null without values"},
    {"net_ns.max", kInt, "ns", kNull, "largest; null without values"},
    {"completion_ns", kObject, "", kAlways, "completion_ns over its signaled work requests: p50, p99, max"},
    {"completion_ns.p50", kInt, "ns", kNull, "median; null without values"},
    {"completion_ns.p99", kInt, "ns", kNull, "99th percentile; null without values"},
    {"completion_ns.max", kInt, "ns", kNull, "largest; null without values"},
    {"total_ns", kObject, "", kAlways, "total_ns over its signaled work requests: p50, p99, max"},
    {"total_ns.p50", kInt, "ns", kNull, "median; null without values"},
    {"total_ns.p99", kInt, "ns", kNull, "99th percentile; null without values"},
    {"total_ns.max", kInt, "ns", kNull, "largest; null without values"},
    {"signaled_wrs", kInt, "count", kAlways, "its signaled work requests with a matched message (what completion_ns and total_ns are over)"},
    {"retx_pkts", kInt, "count", kAlways, "retransmitted packets of its messages"},
    {"naks", kInt, "count", kAlways, "NAKs of its messages"},
    {"cnps", kInt, "count", kAlways, "CNPs received at its QPs' endpoints (traffic it caused)"},
    {"ecn_ce", kInt, "count", kAlways, "ECN-CE marked packets received at its QPs' endpoints"},
    {"ecn_ce_caused", kInt, "count", kAlways, "ECN-CE marked packets received at its peers' endpoints (its own packets marked)"},
    {"unmatched_wr", kInt, "count", kAlways, "its work requests no message matched"},
    {"final", kBool, "", kAlways, "true: its last record; false: a live run's periodic one (cumulative)"},
};

constexpr RecordField kPair[] = {
    {"type", kText, "name", kAlways, "\"pair\": a traced QP whose endpoint the dataplane paired otherwise or not at all"},
    {"ip", kText, "IP address", kAlways, "the QP's address"},
    {"qpn", kInt, "QPN", kAlways, "the QP"},
    {"peer_ip", kText, "IP address", kAlways, "its peer's address from its RTR transition"},
    {"peer_qpn", kInt, "QPN", kAlways, "its peer's QPN from its RTR transition"},
    {"pair_by", kText, "name", kAlways, "host"},
    {"dp_pair_by", kText, "name", kNull, "how the dataplane paired the endpoint; null: it did not"},
    {"dp_peer_ip", kText, "IP address", kNull, "the dataplane's peer address; null: none"},
    {"dp_peer_qpn", kInt, "QPN", kNull, "the dataplane's peer QPN; null: none"},
    {"pid", kInt, "id", kAlways, "the QP's process"},
    {"comm", kText, "text", kAlways, "its command name"},
    {"host", kText, "text", kAlways, "its host"},
};

constexpr RecordField kClock[] = {
    {"type", kText, "name", kAlways, "\"clock\""},
    {"host", kText, "text", kAlways, "the host"},
    {"lo_ns", kInt, "ns", kNull, "lower bound of its offset (host clock - observer clock): max(t_post - t_first); null without matches"},
    {"hi_ns", kInt, "ns", kNull, "upper bound: min(t_poll - t_ack); null without such matches"},
    {"offset_ns", kInt, "ns", kAlways, "the offset used"},
    {"source", kText, "name", kAlways, "option (--clock-offset), same_clock, midpoint, lower, upper or none (0)"},
    {"consistent", kBool, "", kAlways, "false when both bounds exist and lo_ns > hi_ns"},
    {"matches", kInt, "count", kAlways, "matched messages that bounded it"},
};

constexpr RecordField kAlert[] = {
    {"type", kText, "name", kAlways, "\"alert\""},
    {"kind", kText, "name", kAlways, "the rule (insert-correlate --list-rules; docs/correlation.md 8)"},
    {"severity", kText, "name", kAlways, "critical or warning"},
    {"t_ns", kInt, "ns", kAlways, "the first offence (rkey_scan: when the threshold was reached)"},
    {"count", kInt, "count", kAlways, "offences in the alert"},
    {"victim", kObject, "", kAlways, "the target QP and its owner"},
    {"victim.ip", kText, "IP address", kAlways, "its address"},
    {"victim.qpn", kInt, "QPN", kAlways, "its QP"},
    {"victim.pid", kInt, "id", kNull, "its process; null when no traced QP owns it"},
    {"victim.comm", kText, "text", kNull, "its command name; null when untraced"},
    {"victim.cgroup", kInt, "id", kNull, "its cgroup v2 id; null when untraced"},
    {"victim.host", kText, "text", kNull, "its host; null when untraced"},
    {"source", kObject, "", kAlways, "the source the first offending message names"},
    {"source.ip", kText, "IP address", kAlways, "its source IP"},
    {"source.qpn", kInt, "QPN", kNull, "its source QP; null when unknown"},
    {"source.pid", kInt, "id", kNull, "the traced process sending from there; null when untraced"},
    {"source.comm", kText, "text", kNull, "its command name; null when untraced"},
    {"source.host", kText, "text", kNull, "its host; null when untraced"},
    {"source.claimed", kBool, "", kAlways, "true unless the source's own trace vouches for every offence: only claimed, possibly spoofed"},
    {"evidence", kObject, "", kAlways, "the first offending message"},
    {"evidence.op", kText, "name", kAlways, "its op"},
    {"evidence.rkey", kInt, "key", kNull, "its rkey; null for SEND"},
    {"evidence.va", kInt, "address", kNull, "its virtual address; null for SEND"},
    {"evidence.length", kInt, "bytes", kAlways, "the length it accesses (dma_len, else bytes; atomics 8)"},
    {"evidence.psn_first", kInt, "PSN", kAlways, "its first PSN"},
    {"evidence.status", kText, "name", kAlways, "its status (SPEC 5)"},
    {"evidence.pkts", kInt, "count", kAlways, "packets of all the alert's messages"},
    {"evidence.rkeys", kInts, "keys", kAlways, "the distinct rkeys, in order (the first 16)"},
    {"evidence.distinct_rkeys", kInt, "count", kAlways, "distinct rkeys"},
    {"evidence.victims", kInt, "count", kAlways, "distinct target QPs (rkey_scan)"},
    {"evidence.origin", kObject, "", kNull, "where its opening packet came from (insert-dp's msg src_mac, ttl, port) against the claimed address's earlier messages; null when the msg record lacks them", "kind=peer_mismatch|injected_message"},
    {"evidence.origin.src_mac", kText, "MAC address", kAlways, "its Ethernet source", "kind=peer_mismatch|injected_message"},
    {"evidence.origin.ttl", kInt, "hops", kAlways, "its IPv4 TTL / IPv6 hop limit", "kind=peer_mismatch|injected_message"},
    {"evidence.origin.port", kInt, "port id", kNull, "the port it arrived on; null in replay", "kind=peer_mismatch|injected_message"},
    {"evidence.origin.usual", kObject, "", kNull, "the most common origin among the claimed address's earlier messages to this QP, else to any (its posted ones if any); null without any", "kind=peer_mismatch|injected_message"},
    {"evidence.origin.usual.src_mac", kText, "MAC address", kAlways, "their Ethernet source", "kind=peer_mismatch|injected_message"},
    {"evidence.origin.usual.ttl", kInt, "hops", kAlways, "their TTL / hop limit", "kind=peer_mismatch|injected_message"},
    {"evidence.origin.usual.port", kInt, "port id", kNull, "their port; null in replay", "kind=peer_mismatch|injected_message"},
    {"evidence.origin.differs", kTexts, "names", kAlways, "which of src_mac, ttl, port differ from usual (empty without usual)", "kind=peer_mismatch|injected_message"},
    {"t_last_ns", kInt, "ns", kAlways, "the last offence"},
};

constexpr RecordField kCongestion[] = {
    {"type", kText, "name", kAlways, "\"congestion\""},
    {"t_start_ns", kInt, "ns", kAlways, "start of its first congested bin"},
    {"t_end_ns", kInt, "ns", kAlways, "end of its last congested bin"},
    {"where", kObject, "", kAlways, "the destination node"},
    {"where.node", kText, "text", kAlways, "its host (insert-trace --host), or its address when untraced"},
    {"where.dst_ips", kTexts, "IP addresses", kAlways, "the node's addresses the episode's messages went to"},
    {"signals", kObject, "", kAlways, "what shows the congestion"},
    {"signals.cnps", kInt, "count", kAlways, "CNPs at the senders' endpoints whose life overlaps the episode (an upper bound)"},
    {"signals.ecn_ce", kInt, "count", kAlways, "ECN-CE at the node's endpoints overlapping it (an upper bound)"},
    {"signals.retx_pkts", kInt, "count", kAlways, "retransmitted packets of its messages"},
    {"signals.naks", kInt, "count", kAlways, "NAKs of its messages"},
    {"signals.p99_net_ns", kInt, "ns", kAlways, "the largest p99 net latency of its bins"},
    {"signals.baseline_net_ns", kInt, "ns", kAlways, "the node's baseline: 10th percentile of its messages' net latency"},
    {"signals.msgs", kInt, "count", kAlways, "its messages"},
    {"victims", kObjects, "", kAlways, "the applications whose network latency to the node rose by 20 us or more at p99 (over their own baseline, else the node's), most first"},
    {"victims[].ip", kText, "IP address", kAlways, "its address"},
    {"victims[].pid", kInt, "id", kNull, "its process; null when untraced"},
    {"victims[].comm", kText, "text", kNull, "its command name; null when untraced"},
    {"victims[].cgroup", kInt, "id", kNull, "its cgroup v2 id; null when untraced"},
    {"victims[].host", kText, "text", kNull, "its host; null when untraced"},
    {"victims[].msgs", kInt, "count", kAlways, "its messages in the episode"},
    {"victims[].bytes_share", kReal, "fraction", kAlways, "its part of the episode's bytes, 0..1"},
    {"victims[].net_ns_mean", kInt, "ns", kAlways, "mean network latency of its messages in the episode, per message"},
    {"victims[].net_ns_p99", kInt, "ns", kAlways, "their p99 (nearest rank)"},
    {"victims[].baseline_net_ns_mean", kInt, "ns", kNull, "mean network latency of its messages to the node outside episodes, before this one; null without such messages"},
    {"victims[].baseline_net_ns_p99", kInt, "ns", kNull, "their p99; null without"},
    {"victims[].added_net_ns_mean", kInt, "ns", kNull, "net_ns_mean - baseline_net_ns_mean: latency added per message; null without a baseline"},
    {"victims[].added_net_ns_p99", kInt, "ns", kNull, "net_ns_p99 - baseline_net_ns_p99; null without a baseline"},
    {"victims[].cnps", kInt, "count", kAlways, "CNPs at its endpoints that sent the messages"},
    {"contributors", kObjects, "", kAlways, "the episode's source applications, by bytes"},
    {"contributors[].ip", kText, "IP address", kAlways, "its address"},
    {"contributors[].pid", kInt, "id", kNull, "its process; null when untraced"},
    {"contributors[].comm", kText, "text", kNull, "its command name; null when untraced"},
    {"contributors[].cgroup", kInt, "id", kNull, "its cgroup v2 id; null when untraced"},
    {"contributors[].host", kText, "text", kNull, "its host; null when untraced"},
    {"contributors[].msgs", kInt, "count", kAlways, "its messages in the episode"},
    {"contributors[].bytes", kInt, "bytes", kAlways, "their payload toward the node (READ: dma_len)"},
    {"contributors[].bytes_share", kReal, "fraction", kAlways, "its part of the episode's bytes, 0..1"},
    {"contributors[].cnps", kInt, "count", kAlways, "CNPs at its endpoints that sent the messages"},
    {"contributors[].victim", kBool, "", kAlways, "it is also one of the victims"},
};

constexpr RecordField kCorrelateSummary[] = {
    {"type", kText, "name", kAlways, "\"summary\""},
    {"schema", kText, "version", kAlways, "the records' schema version (this page's), MAJOR.MINOR"},
    {"inputs", kObject, "", kAlways, "lines read, by what they held"},
    {"inputs.lines", kInt, "count", kAlways, "lines read"},
    {"inputs.msg", kInt, "count", kAlways, "msg records"},
    {"inputs.qp", kInt, "count", kAlways, "qp records"},
    {"inputs.host", kInt, "count", kAlways, "insert-trace records used"},
    {"inputs.ignored", kInt, "count", kAlways, "records recognised and not used (event, summary, trace_start, ...)"},
    {"bad", kObject, "", kAlways, "lines skipped, by reason"},
    {"bad.not_json", kInt, "count", kAlways, "not a JSON object"},
    {"bad.truncated", kInt, "count", kAlways, "a last line without its newline"},
    {"bad.bad_field", kInt, "count", kAlways, "a known record with a field of the wrong type or missing"},
    {"bad.unknown_type", kInt, "count", kAlways, "a type no producer writes"},
    {"bad.too_long", kInt, "count", kAlways, "live lines longer than --max-line"},
    {"listen", kObject, "", kCond, "with --listen only: the producers' connections"},
    {"listen.connections", kInt, "count", kCond, "connections accepted"},
    {"listen.refused", kInt, "count", kCond, "connections refused for want of a descriptor"},
    {"e2e", kInt, "count", kAlways, "e2e records"},
    {"exact", kInt, "count", kAlways, "of them matched in order"},
    {"resync", kInt, "count", kAlways, "of them matched after a resynchronisation"},
    {"unmatched_wr", kInt, "count", kAlways, "work requests no message matched"},
    {"wire_only", kInt, "count", kAlways, "messages of traced QPs no work request matched"},
    {"src_untraced", kInt, "count", kAlways, "messages from a traced host's address with no candidate QP"},
    {"src_host_untraced", kInt, "count", kAlways, "messages from an address no host trace uses"},
    {"duplicate_msgs", kInt, "count", kAlways, "msg records seen twice (several observers) and dropped"},
    {"pair_conflicts", kInt, "count", kAlways, "messages whose src_qpn differs from their requester QP found by its peer"},
    {"qps_without_ip", kInt, "count", kAlways, "traced QPs whose address was never known"},
    {"recv_matched", kInt, "count", kAlways, "messages matched to a receive completion"},
    {"late", kInt, "count", kAlways, "live: records that came after their QP's queue had passed them"},
    {"evicted", kObject, "", kAlways, "live: items decided at --ttl with what was there"},
    {"evicted.wrs", kInt, "count", kAlways, "work requests"},
    {"evicted.msgs", kInt, "count", kAlways, "messages"},
    {"evicted.completions", kInt, "count", kAlways, "matched pairs written without their completion"},
    {"hosts", kInt, "count", kAlways, "hosts with at least one QP"},
    {"qps", kInt, "count", kAlways, "traced QPs (incarnations)"},
    {"apps", kInt, "count", kAlways, "final app records"},
    {"pairs", kInt, "count", kAlways, "pair records"},
    {"trace_drops", kInt, "count", kAlways, "records the tracers lost (sum of their lost records)"},
    {"alerts", kObject, "", kAlways, "alert records by kind"},
    {"alerts.rkey_unknown", kInt, "count", kAlways, "rkey_unknown alerts"},
    {"alerts.rkey_stale", kInt, "count", kAlways, "rkey_stale alerts"},
    {"alerts.out_of_bounds", kInt, "count", kAlways, "out_of_bounds alerts"},
    {"alerts.access_denied", kInt, "count", kAlways, "access_denied alerts"},
    {"alerts.rkey_scan", kInt, "count", kAlways, "rkey_scan alerts"},
    {"alerts.unowned_qp", kInt, "count", kAlways, "unowned_qp alerts"},
    {"alerts.peer_mismatch", kInt, "count", kAlways, "peer_mismatch alerts"},
    {"alerts.injected_message", kInt, "count", kAlways, "injected_message alerts"},
    {"alertmanager", kObject, "", kAlways, "delivery to --alertmanager (all 0 without)"},
    {"alertmanager.sent", kInt, "count", kAlways, "alerts it accepted (each re-send counts)"},
    {"alertmanager.failed", kInt, "count", kAlways, "alerts not delivered: rejected + dropped"},
    {"alertmanager.rejected", kInt, "count", kAlways, "alerts of POSTs refused with a 4xx other than 429"},
    {"alertmanager.dropped", kInt, "count", kAlways, "alerts that found the queue full or were undelivered at the end"},
    {"alertmanager.retries", kInt, "count", kAlways, "POSTs that repeated a failed one"},
    {"congestion", kInt, "count", kAlways, "congestion records"},
    {"wall_s", kReal, "s", kAlways, "wall-clock time of the run"},
};
// clang-format on

constexpr RecordType kTypes[] = {
    {Producer::insert_dp, "msg",
     "One per RDMA operation (SEND, WRITE, READ, atomic) on RC/UC/XRC, when it completes, a "
     "fatal NAK hits it, or at the end or its endpoint's idle timeout (SPEC 5).",
     kMsg},
    {Producer::insert_dp, "qp",
     "Per endpoint (ip, qpn) - per part, one source each (docs/semantics.md) - every "
     "--interval of packet time and a final one at the end or its idle eviction.",
     kQp},
    {Producer::insert_dp, "event",
     "What happened to a destination endpoint: per kind (PSN gaps, NAKs, CNPs, timeouts) one "
     "record a second with the count and distinct sources; one per pairing.",
     kEvent},
    {Producer::insert_dp, "summary", "Once, last: the run's totals.", kDpSummary},
    {Producer::insert_trace, "trace_start", "Once, first, when the probes are in place.",
     kTraceStart},
    {Producer::insert_trace, "verb",
     "One per verb call a probe saw (post_send, post_recv, poll_cq: one per work request or "
     "completion); the fields after the common ones depend on `verb`.",
     kVerb},
    {Producer::insert_trace, "attach", "What was probed, as libraries and contexts are found.",
     kAttach},
    {Producer::insert_trace, "lost",
     "The ring buffer was full and dropped records (within 250 ms of the loss).", kLost},
    {Producer::insert_trace, "process_exit", "A traced process was found gone.", kProcessExit},
    {Producer::insert_trace, "tick",
     "Every 250 ms in which nothing was traced (with --nats: every 250 ms, to every "
     "partition): the host's clock, so that a live correlator's time moves on while the host "
     "is idle.",
     kTraceTick},
    {Producer::insert_trace, "cgroup",
     "Once per cgroup id, before the first verb record from it: the path people know the "
     "tenant by.",
     kTraceCgroup},
    {Producer::insert_trace, "trace_stats", "Once, last, at the stop: the tracer's counters.",
     kTraceStats},
    {Producer::insert_correlate, "e2e",
     "One per work request matched to its wire message: the latency split host / network / "
     "completion, on the observer's clock.",
     kE2e},
    {Producer::insert_correlate, "app",
     "Per application (host, ip, pid, comm, cgroup) with a matched message: final, and in a "
     "live run every --interval (cumulative).",
     kApp},
    {Producer::insert_correlate, "cgroup",
     "Per (host, cgroup id) a tracer named: its path, before the app records (live: when "
     "learned).",
     kCorrelateCgroup},
    {Producer::insert_correlate, "pair",
     "A traced QP whose RTR peer the dataplane did not pair, or paired otherwise.", kPair},
    {Producer::insert_correlate, "clock",
     "Per host with a QP: its clock's offset from the observer's and its bounds.", kClock},
    {Producer::insert_correlate, "alert",
     "A security alert: offences of one rule, victim and source (docs/correlation.md 8).", kAlert},
    {Producer::insert_correlate, "congestion",
     "A congestion episode toward one node: who was slowed, who sent (docs/correlation.md 9).",
     kCongestion},
    {Producer::insert_correlate, "summary", "Once, last: the join's totals.", kCorrelateSummary},
};

}  // namespace

std::string_view producer_name(Producer p) {
    switch (p) {
        case Producer::insert_dp:
            return "insert-dp";
        case Producer::insert_trace:
            return "insert-trace";
        case Producer::insert_correlate:
            return "insert-correlate";
    }
    return "?";
}

std::string_view field_type_name(FieldType t) {
    switch (t) {
        case FieldType::integer:
            return "integer";
        case FieldType::number:
            return "number";
        case FieldType::string:
            return "string";
        case FieldType::boolean:
            return "boolean";
        case FieldType::object:
            return "object";
        case FieldType::strings:
            return "array of strings";
        case FieldType::integers:
            return "array of integers";
        case FieldType::objects:
            return "array of objects";
    }
    return "?";
}

std::span<const RecordType> record_types() {
    return kTypes;
}

}  // namespace insert::records
