// Diagnostics of INSERT's libraries go through DPDK's log, one log type per component
// (`insert.offload`, `insert.pipeline`), registered in one .cpp of the component with
// RTE_LOG_REGISTER(insert_logtype_<component>, insert.<component>, INFO). An operator sets
// each one's verbosity with EAL's option, after `--`:
//     insert-dp inline --iface a --iface b -- --log-level=insert.offload:info
// (unless --log-level is given, the live commands keep DPDK's types at error and INSERT's at
// info). DPDK's own messages and INSERT's share one stream, stderr: EalSession
// points the log there once EAL is up (DPDK 22.11 writes it to stdout and syslog, and
// stdout is where `--records -` puts records). A command's own messages (bad options, an
// input that cannot be read) are not log lines: they name the command and the input.
// Includers depend on DPDK's headers.
#pragma once

#include <rte_log.h>

// INSERT_LOG(WARNING, offload, "port %u ...", port): one line, prefixed with the log type's
// name. `level` is an RTE_LOG_ level without its prefix.
#define INSERT_LOG(level, component, fmt, ...)           \
    rte_log(RTE_LOG_##level, insert_logtype_##component, \
            "insert." #component ": " fmt "\n" __VA_OPT__(, ) __VA_ARGS__)
