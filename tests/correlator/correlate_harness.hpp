// Builds insert-trace and insert-dp records for the correlator's tests, writes them to
// files, runs the shipped run_correlate() on them and reads back its records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace insert::correlate::test {

using json = nlohmann::ordered_json;

// One simulated host process with one or more QPs: every helper returns a host record.
struct TraceProcess {
    std::string host = "hA";
    int pid = 100;
    std::string comm = "app";
    uint64_t cgroup = 7;
    std::string ip = "10.0.0.1";

    json verb(const char* name, int64_t wall, const std::string& qp) const;
    json create_qp(int64_t wall, const std::string& qp, uint32_t qpn) const;
    json rtr(int64_t wall, const std::string& qp, uint32_t qpn, const std::string& peer_ip,
             uint32_t dest_qpn, uint32_t rq_psn = 0) const;
    json rts(int64_t wall, const std::string& qp, uint32_t qpn, uint32_t sq_psn) const;
    json destroy_qp(int64_t wall, const std::string& qp, uint32_t qpn) const;
    json post_send(int64_t wall, const std::string& qp, uint32_t qpn, uint64_t wr_id,
                   const std::string& opcode, uint64_t len, std::optional<uint64_t> va = {},
                   std::optional<uint32_t> rkey = {}, bool signaled = true) const;
    json poll(int64_t wall, uint32_t qpn, uint64_t wr_id, const std::string& opcode, int status = 0,
              uint32_t byte_len = 0) const;
    json process_exit(int64_t wall) const;
};

// A dataplane msg record (SPEC 7) with the fields the join reads.
json wire_msg(const std::string& src_ip, const std::string& dst_ip, uint32_t dst_qpn,
              std::optional<uint32_t> src_qpn, const std::string& op, uint32_t psn, uint64_t bytes,
              int64_t t_first, std::optional<int64_t> t_ack, std::optional<uint64_t> va = {},
              std::optional<uint32_t> rkey = {}, const std::string& status = "ok");

struct Outcome {
    std::vector<json> records;
    int status = -1;
    std::vector<json> of_type(const std::string& type) const;
    json summary() const;
};

// Writes each group of records to its own file and correlates them; with `report`, the
// terminal report printed on stdout goes there (else --quiet).
Outcome correlate(const std::vector<std::vector<json>>& inputs,
                  const std::vector<std::string>& extra_args = {}, std::string* report = nullptr);
// The same with each input's bytes given as they are.
Outcome correlate_text(const std::vector<std::string>& inputs,
                       const std::vector<std::string>& extra_args = {},
                       std::string* report = nullptr);

}  // namespace insert::correlate::test
