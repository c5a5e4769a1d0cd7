// AlignedVector (autograd/cpu/aligned_vector.h): the kernels' packing buffers start on a cache
// line at every size, including the sizes the system allocator hands out from mmap at a page plus
// 16 bytes, and after growing.
#include <cstdint>

#include "catch.h"
#include "patchgrad/autograd/cpu/aligned_vector.h"

using namespace patchgrad;

TEST_CASE("aligned_vector: data starts on a 64-byte boundary at every size and after growing", "[cpu]") {
    for (const size_t n : {size_t(1), size_t(3), size_t(1000), size_t(8192), size_t(65536), size_t(393216)}) {
        INFO("n " << n);
        AlignedVector<uint32_t> words(n, 7u);
        CHECK(reinterpret_cast<uintptr_t>(words.data()) % 64 == 0);
        CHECK(words[n - 1] == 7u);
        AlignedVector<float> floats;
        floats.resize(n);
        floats.resize(3 * n);  // (grown: a new block)
        CHECK(reinterpret_cast<uintptr_t>(floats.data()) % 64 == 0);
    }
}
