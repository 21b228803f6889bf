// What every bus client of ours (the producers' publisher, the correlator's consumer, leases
// and the merged view's reader) sets up alike on libnats: the connection's options -
// servers, a name on the bus, reconnecting forever with the backoff both sides agree on
// (nats_client.hpp: 0.1 s doubling to 2 s) - and a status as one line of text. Included by
// the libnats sources of insert_nats only (it needs nats.h).
#pragma once

#include <nats/nats.h>

#include <string>
#include <vector>

namespace insert::nats_connect {

// Options for a client named `name` of `servers`, reconnecting forever with backoff. With
// `retry_first`, a first connection that fails is retried in the background too (the
// connect call returns NATS_NOT_YET_CONNECTED). The handlers (null: none) are told of each
// connection made - the first one too, when it came only after retrying - and of each one
// lost, with `closure`.
natsStatus client_options(natsOptions** out, const std::vector<std::string>& servers,
                          const std::string& name, bool retry_first,
                          natsConnectionHandler on_connected, natsConnectionHandler on_disconnected,
                          void* closure);

// The status's text, with the library's last error when it says more, and the JetStream
// error code when there is one.
std::string status_text(natsStatus s, jsErrCode jerr = static_cast<jsErrCode>(0));

}  // namespace insert::nats_connect
