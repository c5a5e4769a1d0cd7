#include "patchgrad/autograd/storage.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "patchgrad/autograd/cpu/threads/parallel.h"

namespace patchgrad {

namespace {

constexpr std::align_val_t kAlignment{64};
// Blocks below this go straight to the system allocator, which recycles small blocks well
// by itself; the cache is for the big activation arrays that malloc would mmap.
constexpr size_t kSmallBlock = 64 * 1024;
constexpr size_t kPage = 4096;
// Blocks of 2 MiB or more start on a 2 MiB boundary and ask Linux for transparent huge pages
// (MADV_HUGEPAGE; most distributions give them only on request): one TLB entry then maps 2 MiB
// instead of 4 KiB, and the ops that stride through big activations (attention's heads, the
// packing of a weight gradient's inputs) stop waiting for page walks. A hint: where it is
// refused, or unknown (other systems), the block is an ordinary one.
#ifdef MADV_HUGEPAGE
constexpr size_t kHugePage = size_t(2) << 20;
std::align_val_t alignment(size_t bytes) { return bytes >= kHugePage ? std::align_val_t{kHugePage} : kAlignment; }
void ask_for_huge_pages(void* p, size_t bytes) {
    if (bytes >= kHugePage) madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
}
#else
std::align_val_t alignment(size_t) { return kAlignment; }
void ask_for_huge_pages(void*, size_t) {}
#endif

size_t block_bytes(int64_t size) {
    const size_t bytes = static_cast<size_t>(size) * sizeof(real);
    return bytes < kSmallBlock ? bytes : (bytes + kPage - 1) / kPage * kPage;
}

class Cache {
public:
    void* allocate(size_t bytes) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stats_.in_use += static_cast<int64_t>(bytes);
            stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
            high_water_ = std::max(high_water_, stats_.in_use);
            if (bytes >= kSmallBlock) {
                auto it = free_.find(bytes);
                if (it != free_.end() && !it->second.empty()) {
                    void* p = it->second.back();
                    it->second.pop_back();
                    stats_.cached -= static_cast<int64_t>(bytes);
                    return p;
                }
                if (stats_.in_use + stats_.cached > 2 * high_water_) release_locked();
            }
        }
        try {
            void* p = ::operator new(bytes, alignment(bytes));
            ask_for_huge_pages(p, bytes);
            return p;
        } catch (const std::bad_alloc&) {
            std::lock_guard<std::mutex> lock(mutex_);
            stats_.in_use -= static_cast<int64_t>(bytes);
            throw;
        }
    }

    void deallocate(void* p, size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.in_use -= static_cast<int64_t>(bytes);
        if (bytes < kSmallBlock) {
            ::operator delete(p, alignment(bytes));
            return;
        }
        free_[bytes].push_back(p);
        stats_.cached += static_cast<int64_t>(bytes);
    }

    MemoryStats stats() {
        std::lock_guard<std::mutex> lock(mutex_);
        return stats_;
    }
    void reset_peak() {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.peak_in_use = stats_.in_use;
    }
    void release() {
        std::lock_guard<std::mutex> lock(mutex_);
        release_locked();
    }

private:
    void release_locked() {
        for (auto& [bytes, blocks] : free_)
            for (void* p : blocks) ::operator delete(p, alignment(bytes));
        free_.clear();
        stats_.cached = 0;
    }

    std::mutex mutex_;
    std::unordered_map<size_t, std::vector<void*>> free_;  // block size in bytes -> free blocks
    MemoryStats stats_;
    int64_t high_water_ = 0;  // the most tensor memory ever in use at once
};

// Never destroyed: tensors in static objects may die after it would have.
Cache& cache() {
    static Cache* c = new Cache;
    return *c;
}

}  // namespace

Storage::Storage(int64_t size) : size_(size) {
    if (size <= 0) return;
    check_fits_in_memory(size);
    try {
        data_ = static_cast<real*>(cache().allocate(block_bytes(size)));
    } catch (const std::bad_alloc&) {
        throw OutOfMemory(size);
    }
}

Storage::Storage(int64_t size, real fill) : Storage(size) {
    // Gradients start as big zero fills; memory-bound, but two threads still fill faster.
    real* d = data_;
    parallel_for(size_, kElementGrain, [d, fill](int64_t begin, int64_t end) { std::fill(d + begin, d + end, fill); });
}

Storage::~Storage() { reset(); }

Storage::Storage(Storage&& other) noexcept : data_(other.data_), size_(other.size_), version_(other.version_) {
    other.data_ = nullptr;
    other.size_ = 0;
}

Storage& Storage::operator=(Storage&& other) noexcept {
    if (this != &other) {
        reset();
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        std::swap(version_, other.version_);
    }
    return *this;
}

Storage Storage::clone() const {
    Storage copy(size_);
    std::copy(data_, data_ + size_, copy.data_);
    return copy;
}

void Storage::reset() {
    if (data_) cache().deallocate(data_, block_bytes(size_));
    data_ = nullptr;
    size_ = 0;
}

OutOfMemory::OutOfMemory(int64_t reals)
    : message_("out of memory: cannot allocate " + format_bytes(double(reals) * sizeof(real)) + " for " +
               std::to_string(reals) + " reals") {}

int64_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<int64_t>(pages) * page_size;
}

void check_fits_in_memory(int64_t reals) {
    // Read once: the machine's memory does not change while a program runs.
    static const int64_t machine = physical_memory_bytes();
    const int64_t limit = machine > 0 ? machine : std::numeric_limits<int64_t>::max();
    if (reals > limit / static_cast<int64_t>(sizeof(real))) throw OutOfMemory(reals);
}

std::string format_bytes(double bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int unit = 0;
    while (bytes >= 1024 && unit < 6) {
        bytes /= 1024;
        ++unit;
    }
    char text[48];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
    return text;
}

MemoryStats memory_stats() { return cache().stats(); }
void reset_peak_memory() { cache().reset_peak(); }
void release_cached_memory() { cache().release(); }

}  // namespace patchgrad
