// Marks the C entry points of libibverbs' ABI; the linker version script assigns each
// its IBVERBS_1.x version and hides everything else.
#pragma once

#define SV_EXPORT extern "C" __attribute__((visibility("default")))
