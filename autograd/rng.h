// rng.h — the one source of randomness in patchgrad, always passed explicitly.
//
// xoshiro256** (Blackman & Vigna), seeded through splitmix64. We do not use
// std::normal_distribution & co. because their output differs between standard libraries;
// these few lines give the same numbers on every platform, and the whole state is four
// integers, so a checkpoint can save it and a resumed run continues the same stream.
#pragma once

#include <array>
#include <cstdint>

namespace patchgrad {

class Rng {
public:
    explicit Rng(uint64_t seed = 0);

    uint64_t next_u64();
    double uniform();                         // [0, 1), 53 random bits
    double uniform(double low, double high);  // [low, high)
    double normal();                          // N(0, 1), Box–Muller
    uint64_t below(uint64_t n);               // uniform integer in [0, n), unbiased
    bool bernoulli(double p) { return uniform() < p; }

    // For checkpoints: the full generator state. set_state refuses four zeros (std::invalid_argument):
    // xoshiro never leaves that state, every draw would be 0 and below() would loop for ever.
    std::array<uint64_t, 4> state() const { return s_; }
    void set_state(const std::array<uint64_t, 4>& s);

private:
    std::array<uint64_t, 4> s_;
};

}  // namespace patchgrad
