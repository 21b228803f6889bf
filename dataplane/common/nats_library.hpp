// The client library (libnats) is shared by every bus client of a process - a correlator
// instance has its consumer, its leases and its output publisher, each with its own
// connection. Closing the library (nats_CloseAndWait) waits for its threads, so that no
// callback runs into an object once it is freed; done while another client is still
// connected it would tear that one down too. So each client holds the library while it
// lives, and hands over at its end what the library's callbacks may still use: freed once
// the last client let go and the library was closed.
#pragma once

#include <functional>

namespace insert::nats_library {

// A client starts using the library.
void hold();
// A client is done (its connection destroyed): `free_after` runs once the library is
// closed - now, if this was the last client.
void release(std::function<void()> free_after);

}  // namespace insert::nats_library
