#include "dataplane/export/record_names.hpp"

namespace insert::exporter {

using namespace insert::state;

std::string_view msg_op_name(MsgOp op) {
    switch (op) {
        case MsgOp::send:
            return "SEND";
        case MsgOp::write:
            return "WRITE";
        case MsgOp::read:
            return "READ";
        case MsgOp::cmp_swap:
            return "CMP_SWAP";
        case MsgOp::fetch_add:
            return "FETCH_ADD";
    }
    return "?";
}

std::string_view msg_status_name(MsgStatus s) {
    switch (s) {
        case MsgStatus::ok:
            return "ok";
        case MsgStatus::nak_inv:
            return "nak_inv";
        case MsgStatus::nak_access:
            return "nak_access";
        case MsgStatus::nak_op:
            return "nak_op";
        case MsgStatus::nak_seq:
            return "nak_seq";
        case MsgStatus::nak_rnr:
            return "nak_rnr";
        case MsgStatus::incomplete:
            return "incomplete";
    }
    return "?";
}

std::string_view event_kind_name(EventKind k) {
    switch (k) {
        case EventKind::gap:
            return "gap";
        case EventKind::nak:
            return "nak";
        case EventKind::rnr_nak:
            return "rnr_nak";
        case EventKind::fatal_nak:
            return "fatal_nak";
        case EventKind::cnp:
            return "cnp";
        case EventKind::timeout:
            return "timeout";
        case EventKind::pair:
            return "pair";
        case EventKind::unknown_qp:
            return "unknown_qp";
    }
    return "?";
}

std::string_view pair_by_name(PairBy by) {
    switch (by) {
        case PairBy::none:
            return "";
        case PairBy::host:
            return "host";
        case PairBy::cm:
            return "cm";
        case PairBy::sport:
            return "sport";
        case PairBy::ip:
            return "ip";
        case PairBy::psn:
            return "psn";
    }
    return "";
}

std::string_view transport_name(TransportFamily t) {
    switch (t) {
        case TransportFamily::unknown:
            return "";
        case TransportFamily::rc:
            return "RC";
        case TransportFamily::uc:
            return "UC";
        case TransportFamily::ud:
            return "UD";
        case TransportFamily::xrc:
            return "XRC";
    }
    return "";
}

}  // namespace insert::exporter
