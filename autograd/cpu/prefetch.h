// prefetch.h — asking for memory before a loop reads it.
#pragma once

#include <cstdint>

namespace patchgrad {

// Asks for every 64-byte cache line of [begin, end) (nothing when end <= begin). For data a
// later step will read and the hardware's prefetchers cannot foresee: rows whose turn comes
// after some other work, such as the MLP op's next block of rows (mlp.cpp).
inline void prefetch_lines(const void* begin, const void* end) {
    for (auto p = reinterpret_cast<uintptr_t>(begin); p < reinterpret_cast<uintptr_t>(end); p += 64)
        __builtin_prefetch(reinterpret_cast<const void*>(p));
}

}  // namespace patchgrad
