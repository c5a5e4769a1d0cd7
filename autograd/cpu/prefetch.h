// prefetch.h — asking for memory before a loop reads it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace patchgrad {

// Asks for every 64-byte cache line of [begin, end) (nothing when end <= begin). For data a
// later step will read and the hardware's prefetchers cannot foresee: rows whose turn comes
// after some other work, such as the MLP op's next block of rows (mlp.cpp).
inline void prefetch_lines(const void* begin, const void* end) {
    for (auto p = reinterpret_cast<uintptr_t>(begin); p < reinterpret_cast<uintptr_t>(end); p += 64)
        __builtin_prefetch(reinterpret_cast<const void*>(p));
}

// The cache lines of a block of op(X), asked for a few at a time, in the order packing or the
// micro-kernel reads them: `runs` runs of `run` reals, `ld` apart. The gemm drivers fetch the
// next block of A this way while the kernel multiplies the current one: a step's activations
// are far out of cache by the time a product reads them, and a block's first pass over A would
// otherwise wait for memory (tutorials/12_speed/measurements.md#kernel-notes). `locality` is
// __builtin_prefetch's: 3 asks for every level of cache (prefetcht0), 2 for L2 and beyond
// (prefetcht1); which is faster was measured per driver (kernel notes).
template <class Real, int locality = 3>
class BlockPrefetch {
public:
    BlockPrefetch() = default;
    BlockPrefetch(bool trans, const Real* X, int64_t ld, int64_t r0, int64_t k0, int64_t rows, int64_t kc)
        : start_(trans ? X + k0 * ld + r0 : X + r0 * ld + k0),
          ld_(ld),
          runs_(trans ? kc : rows),
          run_(trans ? rows : kc) {}
    // The block of up to `rows` rows that follows rows [r0, r0 + rows), among those before
    // row_end; nothing to fetch past the last.
    static BlockPrefetch after(bool trans, const Real* X, int64_t ld, int64_t r0, int64_t rows, int64_t row_end,
                               int64_t k0, int64_t kc) {
        const int64_t next = r0 + rows;
        if (next >= row_end) return BlockPrefetch();
        return BlockPrefetch(trans, X, ld, next, k0, std::min(rows, row_end - next), kc);
    }
    int64_t lines() const { return runs_ * ((run_ + kPerLine - 1) / kPerLine); }
    void fetch(int64_t lines) {
        for (; lines > 0 && next_run_ < runs_; --lines) {
            __builtin_prefetch(start_ + next_run_ * ld_ + next_real_, 0, locality);
            next_real_ += kPerLine;
            if (next_real_ >= run_) {
                // (A run that does not start on a line boundary ends on one line more.)
                __builtin_prefetch(start_ + next_run_ * ld_ + run_ - 1, 0, locality);
                ++next_run_;
                next_real_ = 0;
            }
        }
    }

private:
    static constexpr int64_t kPerLine = 64 / sizeof(Real);  // reals per 64-byte line
    const Real* start_ = nullptr;
    int64_t ld_ = 0, runs_ = 0, run_ = 0, next_run_ = 0, next_real_ = 0;
};

}  // namespace patchgrad
