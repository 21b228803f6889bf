// ibv_wc_status names as insert-trace prints them (docs/insert-trace.md): rdma-core's names
// without the IBV_WC_ prefix, by status code. The tracer writes them and the correlator
// writes them back into its `e2e` records; neither links libibverbs (the tracer would
// trace itself), so the table is here, once.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace insert::hosttrace {

inline constexpr std::array<std::string_view, 24> kWcStatusNames = {"SUCCESS",
                                                                    "LOC_LEN_ERR",
                                                                    "LOC_QP_OP_ERR",
                                                                    "LOC_EEC_OP_ERR",
                                                                    "LOC_PROT_ERR",
                                                                    "WR_FLUSH_ERR",
                                                                    "MW_BIND_ERR",
                                                                    "BAD_RESP_ERR",
                                                                    "LOC_ACCESS_ERR",
                                                                    "REM_INV_REQ_ERR",
                                                                    "REM_ACCESS_ERR",
                                                                    "REM_OP_ERR",
                                                                    "RETRY_EXC_ERR",
                                                                    "RNR_RETRY_EXC_ERR",
                                                                    "LOC_RDD_VIOL_ERR",
                                                                    "REM_INV_RD_REQ_ERR",
                                                                    "REM_ABORT_ERR",
                                                                    "INV_EECN_ERR",
                                                                    "INV_EEC_STATE_ERR",
                                                                    "FATAL_ERR",
                                                                    "RESP_TIMEOUT_ERR",
                                                                    "GENERAL_ERR",
                                                                    "TM_ERR",
                                                                    "TM_RNDV_INCOMPLETE"};

// The name of a status code; UNKNOWN for codes past the table.
inline std::string_view wc_status_name(uint32_t code) {
    return code < kWcStatusNames.size() ? kWcStatusNames[code] : "UNKNOWN";
}

}  // namespace insert::hosttrace
