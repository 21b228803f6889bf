// insert-correlate: the end-to-end join of host traces and wire telemetry (SPEC.md
// section 10, docs/correlation.md).
#include <cstdio>
#include <string>

#include "correlator/run/correlate_run.hpp"
#include "correlator/tools/allocator.hpp"
#include "correlator/tools/correlate_options.hpp"

int main(int argc, char** argv) {
    insert::correlate::CorrelateOptions options;
    std::string error;
    const int parsed = insert::correlate::parse_correlate_options(argc, argv, options, error);
    if (parsed == 0) return 0;
    if (parsed > 0) {
        std::fprintf(stderr, "insert-correlate: %s\n", error.c_str());
        return parsed;
    }
    if (!insert::correlate::is_live_run(options)) insert::correlate::tune_allocator_for_batch_run();
    return insert::correlate::run_correlate(options);
}
