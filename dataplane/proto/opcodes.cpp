#include "dataplane/proto/opcodes.hpp"

namespace insert::proto {

std::string_view transport_name(Transport t) {
    switch (t) {
        case Transport::rc:
            return "RC";
        case Transport::uc:
            return "UC";
        case Transport::ud:
            return "UD";
        case Transport::xrc:
            return "XRC";
        case Transport::cnp:
            return "CNP";
        case Transport::reserved:
            break;
    }
    return "reserved";
}

std::string_view op_kind_name(OpKind k) {
    switch (k) {
        case OpKind::send:
            return "SEND";
        case OpKind::write:
            return "WRITE";
        case OpKind::read_request:
            return "READ";
        case OpKind::read_response:
            return "READ_RESPONSE";
        case OpKind::ack:
            return "ACK";
        case OpKind::atomic_ack:
            return "ATOMIC_ACK";
        case OpKind::cmp_swap:
            return "CMP_SWAP";
        case OpKind::fetch_add:
            return "FETCH_ADD";
        case OpKind::cnp:
            return "CNP";
        case OpKind::reserved:
            break;
    }
    return "reserved";
}

}  // namespace insert::proto
