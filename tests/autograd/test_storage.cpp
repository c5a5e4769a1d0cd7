// The caching allocator under tensor storage (autograd/storage.h), and the tensors that
// share memory with their input (reshape, and select/slice of a contiguous run).
#include <sys/mman.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/storage.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("storage: big blocks are reused for the same size, counted in and out of use", "[storage]") {
    release_cached_memory();
    const MemoryStats start = memory_stats();
    const int64_t n = 100000;  // 400-800 KB: a cached size
    const real* first;
    {
        Storage a(n, real(1));
        first = a.data();
        const MemoryStats during = memory_stats();
        REQUIRE(during.in_use >= start.in_use + n * int64_t(sizeof(real)));
        REQUIRE(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
    }
    REQUIRE(memory_stats().in_use == start.in_use);
    REQUIRE(memory_stats().cached >= n * int64_t(sizeof(real)));
    Storage b(n);  // the freed block comes back
    REQUIRE(b.data() == first);
    REQUIRE(memory_stats().cached == start.cached);
    b.reset();
    release_cached_memory();
    REQUIRE(memory_stats().cached == 0);
}

#ifdef MADV_HUGEPAGE
namespace {
// The VmFlags line of the mapping in /proc/self/smaps that holds address p ("" if none).
std::string mapping_flags(const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<uintptr_t>(p);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long long lo, hi;
        if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2)
            inside = lo <= at && at < hi;
        else if (inside && line.rfind("VmFlags:", 0) == 0)
            return line;
    }
    return "";
}
}  // namespace

TEST_CASE("storage: a block of 2 MiB or more starts on a 2 MiB boundary and asks for huge pages", "[storage]") {
    release_cached_memory();
    const int64_t n = (int64_t(3) << 20) / int64_t(sizeof(real));  // 3 MiB: one huge page and a tail
    const real* first;
    {
        Storage a(n, real(2));
        first = a.data();
        REQUIRE(reinterpret_cast<uintptr_t>(a.data()) % (uintptr_t(2) << 20) == 0);
        // madvise marks the mapping ("hg"), whether or not the kernel then finds a huge page.
        if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
            const std::string flags = mapping_flags(a.data());
            INFO("VmFlags of the block's mapping: " << flags);
            REQUIRE(flags.find(" hg") != std::string::npos);
        } else {
            WARN("this kernel has no transparent huge pages: only the alignment is checked");
        }
    }
    Storage b(n);  // back from the cache, still aligned
    REQUIRE(b.data() == first);
    b.reset();
    release_cached_memory();  // freed with the alignment it was allocated with (ASan checks)
    REQUIRE(memory_stats().cached == 0);
    Storage small(1000);  // below 2 MiB: a cache line is enough
    REQUIRE(reinterpret_cast<uintptr_t>(small.data()) % 64 == 0);
}
#endif

TEST_CASE("storage: a block larger than the machine's memory is refused at once, saying how large",
          "[storage][errors]") {
    CHECK(physical_memory_bytes() > 0);  // Linux and macOS both say
    const MemoryStats start = memory_stats();
    const int64_t reals = std::numeric_limits<int64_t>::max() / 2;
    try {
        Storage s(reals);
        FAIL("expected OutOfMemory");
    } catch (const OutOfMemory& e) {
        CHECK(std::string(e.what()) == "out of memory: cannot allocate " + format_bytes(double(reals) * sizeof(real)) +
                                           " for " + std::to_string(reals) + " reals");
    }
    CHECK(memory_stats().in_use == start.in_use);
    CHECK(format_bytes(512) == "512 bytes");
    CHECK(format_bytes(1536) == "1.5 KiB");
    CHECK(format_bytes(12884901888.0) == "12.0 GiB");
    CHECK(format_bytes(double(reals) * 4) == "16.0 EiB");
}

TEST_CASE("storage: fill, clone and move", "[storage]") {
    Storage a(5, real(2.5));
    for (int64_t i = 0; i < 5; ++i) REQUIRE(a[i] == real(2.5));
    Storage c = a.clone();
    c[0] = 7;
    REQUIRE(a[0] == real(2.5));
    Storage m = std::move(c);
    REQUIRE(c.empty());
    REQUIRE(m.size() == 5);
    REQUIRE(m[0] == 7);
    Storage none(0);
    REQUIRE(none.empty());
}

TEST_CASE("storage: reshape and select of the first axis share memory, permute copies, gradients stay separate",
          "[storage][op:reshape][op:select]") {
    Rng rng(1);
    Tensor x = rand_tensor({3, 4, 5}, rng);
    Tensor r = reshape(x, {12, 5});
    Tensor s = select(x, 0, 1);
    Tensor t = slice(x, 0, 1, 3);
    Tensor p = permute(x, {1, 0, 2});
    REQUIRE(r.data() == x.data());
    REQUIRE(s.data() == x.data() + 20);
    REQUIRE(t.data() == x.data() + 20);
    REQUIRE(p.data() != x.data());
    Tensor inner = select(x, 1, 2);  // not a contiguous run: copied
    REQUIRE((inner.data() < x.data() || inner.data() >= x.data() + x.numel()));

    // The results are ops of x; their gradients flow back through the graph, not the memory.
    Tensor loss = sum(r * r) + sum(s) + sum(t) * real(2);
    loss.backward();
    for (int64_t b = 0; b < 3; ++b)
        for (int64_t i = 0; i < 4; ++i)
            for (int64_t j = 0; j < 5; ++j) {
                const real expected = 2 * x.at({b, i, j}) + (b == 1 ? 1 : 0) + (b >= 1 ? 2 : 0);
                REQUIRE(x.grad().at({b, i, j}) == Approx(expected));
            }
}
