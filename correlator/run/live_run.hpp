// insert-correlate on live inputs: pipes, FIFOs, standard input and producers connecting
// to --listen (insert-trace --unix, or anything writing JSON Lines to the socket), read
// with poll() as they write, joined window after window (LiveCorrelator). Regular files
// given beside them are read as streams that end. Stops on SIGINT/SIGTERM, --duration, or
// when every input ended and nothing listens; the rest is then decided, and the final
// records and the summary written. SIGHUP reopens the --records file (logrotate). The
// --listen socket's limits: listen_socket.hpp (descriptors, a second collector, its mode),
// stream_source.hpp (--max-line).
#pragma once

#include "correlator/run/run_options.hpp"

namespace insert::correlate {

int run_live(const CorrelateOptions& options);

}  // namespace insert::correlate
