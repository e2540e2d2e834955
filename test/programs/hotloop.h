// The library half of shared_lib: libhotloop.so exports the hot loop.
#pragma once

#include <cstdint>

extern "C" {
/// Runs `steps` dependent multiply-xor steps on x (fewer in the HALVE_HOT_LOOP build).
uint64_t hot_loop(uint64_t x, uint64_t steps);
}
