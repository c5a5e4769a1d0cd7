// storage.h — the memory under every tensor's data and gradient, and the cache that
// recycles it.
//
// Why a cache. A training step of a small ViT creates a few hundred activation and
// gradient arrays (0.8 GiB for cifar-tiny at batch 128) and frees them all again. Handed
// straight to malloc, the big ones are mmap'ed fresh and returned to the OS every step, so
// each step pays for ~200,000 page faults and the kernel zeroing every page, most of a
// step's time. Like PyTorch's GPU allocator, patchgrad keeps freed blocks and
// hands them out again for the next request of the same size; a training step asks for
// the same sizes every step, so after the first step no big block is allocated again.
// Blocks under 64 KiB go to the system allocator, which recycles small blocks well itself.
//
// The cache is the one piece of shared mutable state besides the RNG and the CPU settings
// (thread count, instruction-set level, matmul precision); it holds free memory only, so it
// can never change a result. It is guarded by a mutex. Blocks are reused only for requests
// of exactly their size (rounded up to 4 KiB): the gradient of a tensor has the tensor's
// size, so the backward pass reuses the forward's activations, and a cifar-tiny step holds 7%
// more than its peak of live tensors. When a request it cannot serve would take the memory
// held (in use + cached) above twice the most ever in use at once, the cache is emptied
// first, so a program whose sizes keep changing (a smaller last batch, an evaluation) cannot
// make it grow without bound. On Linux a block of 2 MiB or more starts on a 2 MiB boundary and
// asks for transparent huge pages: a step's big arrays are then mapped by a few hundred TLB
// entries instead of 200,000, and the ops that stride through them wait less for page walks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

#include "patchgrad/autograd/real.h"

namespace patchgrad {

// An owned array of `size()` reals, 64-byte aligned (a cache line, one AVX-512 vector).
// Move-only; a copy is explicit (`clone`). New storage is uninitialised unless a fill value
// is given: ops that overwrite every element skip the fill.
class Storage {
public:
    Storage() = default;
    explicit Storage(int64_t size);  // uninitialised
    Storage(int64_t size, real fill);
    ~Storage();
    Storage(Storage&& other) noexcept;
    Storage& operator=(Storage&& other) noexcept;
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    Storage clone() const;
    real* data() { return data_; }
    const real* data() const { return data_; }
    int64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    real& operator[](int64_t i) { return data_[i]; }
    const real& operator[](int64_t i) const { return data_[i]; }
    void reset();  // back to empty, memory returned to the cache

    // How often the contents were changed in place through Tensor::data_for_write, by any
    // tensor viewing this memory. The backward engine compares it with the count each op saw
    // when it was recorded (tensor.h, "Changing a tensor in place").
    int64_t version() const { return version_; }
    void bump_version() { ++version_; }

private:
    real* data_ = nullptr;
    int64_t size_ = 0;
    int64_t version_ = 0;
};

// What the cache has seen, in bytes (block sizes, rounded up as allocated).
struct MemoryStats {
    int64_t in_use = 0;       // held by live Storage objects
    int64_t peak_in_use = 0;  // maximum of in_use since the last reset_peak_memory()
    int64_t cached = 0;       // freed blocks kept for reuse
};
MemoryStats memory_stats();
void reset_peak_memory();
void release_cached_memory();  // give every cached block back to the system

// What Storage throws when the system cannot provide the memory: a std::bad_alloc, so code
// that handles running out of memory still catches it, but one whose what() says how much
// was asked for ("out of memory: cannot allocate 12.0 GiB for 3221225472 reals") where a
// bare std::bad_alloc says nothing.
class OutOfMemory : public std::bad_alloc {
public:
    explicit OutOfMemory(int64_t reals);
    const char* what() const noexcept override { return message_.c_str(); }

private:
    std::string message_;
};

// The machine's physical memory in bytes (0 if the system does not say): what sizes are
// checked against before anything big is allocated, so a request that can never fit is
// refused in one line at once instead of swapping or dying later.
int64_t physical_memory_bytes();
// Throws OutOfMemory when `reals` numbers need more bytes than the machine has (or than
// size_t counts). Storage checks every allocation with it, and Tensor every new shape.
void check_fits_in_memory(int64_t reals);
// 1536 -> "1.5 KiB", 12884901888 -> "12.0 GiB": for messages about memory.
std::string format_bytes(double bytes);

}  // namespace patchgrad
