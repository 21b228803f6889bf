// The text SPEC.md section 7 gives each enum value in records.
#pragma once

#include <string_view>

#include "dataplane/state/records.hpp"

namespace insert::exporter {

std::string_view msg_op_name(state::MsgOp op);
std::string_view msg_status_name(state::MsgStatus status);
std::string_view event_kind_name(state::EventKind kind);
std::string_view pair_by_name(state::PairBy by);            // "" for none
std::string_view transport_name(state::TransportFamily t);  // "" for unknown

}  // namespace insert::exporter
