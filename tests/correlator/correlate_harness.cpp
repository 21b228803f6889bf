#include "tests/correlator/correlate_harness.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "correlator/run/correlate_run.hpp"
#include "correlator/tools/correlate_options.hpp"

namespace insert::correlate::test {

json TraceProcess::verb(const char* name, int64_t wall, const std::string& qp) const {
    json j;
    j["type"] = "verb";
    j["verb"] = name;
    j["t_ns"] = wall - 1000;
    j["wall_ns"] = wall;
    j["pid"] = pid;
    j["tid"] = pid;
    j["comm"] = comm;
    j["cgroup"] = cgroup;
    j["ip"] = ip;
    j["ctx"] = "0x1000";
    if (!qp.empty()) j["qp"] = qp;
    return j;
}

json TraceProcess::create_qp(int64_t wall, const std::string& qp, uint32_t qpn) const {
    json j = verb("create_qp", wall, qp);
    j["qpn"] = qpn;
    j["qp_type"] = "RC";
    j["pd"] = "0x2000";
    j["ret"] = 0;
    j["host"] = host;
    return j;
}

json TraceProcess::rtr(int64_t wall, const std::string& qp, uint32_t qpn,
                       const std::string& peer_ip, uint32_t dest_qpn, uint32_t rq_psn) const {
    json j = verb("modify_qp", wall, qp);
    j["qpn"] = qpn;
    j["from_state"] = "INIT";
    j["state"] = "RTR";
    j["dest_qpn"] = dest_qpn;
    j["rq_psn"] = rq_psn;
    j["peer_ip"] = peer_ip;
    j["ret"] = 0;
    j["host"] = host;
    return j;
}

json TraceProcess::rts(int64_t wall, const std::string& qp, uint32_t qpn, uint32_t sq_psn) const {
    json j = verb("modify_qp", wall, qp);
    j["qpn"] = qpn;
    j["from_state"] = "RTR";
    j["state"] = "RTS";
    j["sq_psn"] = sq_psn;
    j["ret"] = 0;
    j["host"] = host;
    return j;
}

json TraceProcess::destroy_qp(int64_t wall, const std::string& qp, uint32_t qpn) const {
    json j = verb("destroy_qp", wall, qp);
    j["qpn"] = qpn;
    j["host"] = host;
    return j;
}

json TraceProcess::post_send(int64_t wall, const std::string& qp, uint32_t qpn, uint64_t wr_id,
                             const std::string& opcode, uint64_t len, std::optional<uint64_t> va,
                             std::optional<uint32_t> rkey, bool signaled) const {
    json j = verb("post_send", wall, qp);
    j["qpn"] = qpn;
    j["wr_id"] = wr_id;
    j["opcode"] = opcode;
    j["send_flags"] = signaled ? 2 : 0;
    j["signaled"] = signaled;
    j["num_sge"] = 1;
    j["len"] = len;
    j["remote_addr"] = va ? json(*va) : json(nullptr);
    j["rkey"] = rkey ? json(*rkey) : json(nullptr);
    j["imm"] = nullptr;
    j["chain_index"] = 0;
    j["truncated"] = false;
    j["host"] = host;
    return j;
}

json TraceProcess::poll(int64_t wall, uint32_t qpn, uint64_t wr_id, const std::string& opcode,
                        int status, uint32_t byte_len) const {
    json j = verb("poll_cq", wall, "");
    j["cq"] = "0x3000";
    j["qpn"] = qpn;
    j["wr_id"] = wr_id;
    j["status"] = status == 0 ? "SUCCESS" : "ERROR";
    j["status_code"] = status;
    j["opcode"] = opcode;
    j["byte_len"] = byte_len;
    j["imm"] = nullptr;
    j["src_qp"] = 0;
    j["wc_flags"] = 0;
    j["index"] = 0;
    j["polled"] = 1;
    j["host"] = host;
    return j;
}

json TraceProcess::process_exit(int64_t wall) const {
    return {{"type", "process_exit"}, {"t_ns", wall - 1000}, {"wall_ns", wall}, {"pid", pid},
            {"comm", comm},           {"open_qps", 0},       {"open_mrs", 0},   {"host", host}};
}

json wire_msg(const std::string& src_ip, const std::string& dst_ip, uint32_t dst_qpn,
              std::optional<uint32_t> src_qpn, const std::string& op, uint32_t psn, uint64_t bytes,
              int64_t t_first, std::optional<int64_t> t_ack, std::optional<uint64_t> va,
              std::optional<uint32_t> rkey, const std::string& status) {
    const bool rdma = op != "SEND";
    const bool atomic = op == "CMP_SWAP" || op == "FETCH_ADD";
    return {{"type", "msg"},
            {"src_ip", src_ip},
            {"dst_ip", dst_ip},
            {"dst_qpn", dst_qpn},
            {"src_qpn", src_qpn ? json(*src_qpn) : json(nullptr)},
            {"op", op},
            {"imm", nullptr},
            {"inv", nullptr},
            {"psn_first", psn},
            {"psn_last", psn},
            {"pkts", 1},
            {"bytes", atomic ? 0 : bytes},
            {"va", rdma && va ? json(*va) : json(nullptr)},
            {"rkey", rdma && rkey ? json(*rkey) : json(nullptr)},
            {"dma_len", rdma && !atomic ? json(bytes) : json(nullptr)},
            {"t_first_ns", t_first},
            {"t_last_ns", t_first},
            {"t_ack_ns", t_ack ? json(*t_ack) : json(nullptr)},
            {"latency_ns", t_ack ? json(*t_ack - t_first) : json(nullptr)},
            {"retx_pkts", 0},
            {"naks", 0},
            {"rnr_naks", 0},
            {"status", status}};
}

std::vector<json> Outcome::of_type(const std::string& type) const {
    std::vector<json> out;
    for (const json& r : records)
        if (r.value("type", "") == type) out.push_back(r);
    return out;
}

json Outcome::summary() const {
    const auto s = of_type("summary");
    return s.empty() ? json() : s.front();
}

Outcome correlate(const std::vector<std::vector<json>>& inputs,
                  const std::vector<std::string>& extra_args, std::string* report) {
    std::vector<std::string> texts;
    for (const auto& records : inputs) {
        std::string text;
        for (const json& r : records) text += r.dump() + "\n";
        texts.push_back(std::move(text));
    }
    return correlate_text(texts, extra_args, report);
}

Outcome correlate_text(const std::vector<std::string>& inputs,
                       const std::vector<std::string>& extra_args, std::string* report) {
    static std::atomic<int> counter{0};
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() /
        ("correlate_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir);
    std::vector<std::string> args = {"insert-correlate"};
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::string path = (dir / ("in" + std::to_string(i) + ".jsonl")).string();
        std::ofstream f(path, std::ios::binary);
        f << inputs[i];
        args.push_back(path);
    }
    const std::string out_path = (dir / "out.jsonl").string();
    args.insert(args.end(), {"--records", out_path});
    if (!report) args.push_back("--quiet");
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    Outcome run;
    CorrelateOptions options;
    std::string error;
    const int parsed =
        parse_correlate_options(static_cast<int>(argv.size()), argv.data(), options, error);
    if (parsed >= 0) {
        run.status = parsed;
        return run;
    }
    if (report) testing::internal::CaptureStdout();
    run.status = run_correlate(options);
    if (report) *report = testing::internal::GetCapturedStdout();
    std::ifstream f(out_path);
    for (std::string line; std::getline(f, line);)
        if (!line.empty()) run.records.push_back(json::parse(line));
    std::filesystem::remove_all(dir);
    return run;
}

}  // namespace insert::correlate::test
