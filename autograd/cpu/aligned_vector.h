// aligned_vector.h — std::vector whose data starts on a 64-byte boundary, for the kernels'
// packed operands and scratch buffers.
//
// Why. std::vector's memory is aligned for any scalar type, 16 bytes with glibc, and a large
// block (128 KiB or more by default) may come from mmap at a page plus 16 bytes: a packed panel of B then starts 16
// bytes into a cache line, every 64-byte vector load of it reads two lines, and an AMX tile row
// (64 bytes) likewise. Tensors are 64-byte aligned already (storage.h); this is the same for the
// buffers the kernels keep for themselves.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace patchgrad {

template <class T>
struct CacheLineAllocator {
    using value_type = T;
    static constexpr std::size_t kAlignment = 64;
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlignment))); }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t(kAlignment)); }
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const noexcept {
        return true;
    }
    template <class U>
    bool operator!=(const CacheLineAllocator<U>&) const noexcept {
        return false;
    }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace patchgrad
