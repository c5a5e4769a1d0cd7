#include "patchgrad/autograd/rng.h"

#include <cmath>
#include <stdexcept>

namespace patchgrad {

namespace {
uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(uint64_t seed) {
    for (auto& word : s_) word = splitmix64(seed);
}

void Rng::set_state(const std::array<uint64_t, 4>& s) {
    if (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0)
        throw std::invalid_argument("Rng::set_state: an all-zero state, which the generator never leaves");
    s_ = s;
}

uint64_t Rng::next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::uniform(double low, double high) { return low + (high - low) * uniform(); }

double Rng::normal() {
    // Box–Muller with one fresh pair per call: simpler than caching the second value, and
    // keeps the state a pure function of the number of draws.
    const double u1 = 1.0 - uniform();  // (0, 1], so log is finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

uint64_t Rng::below(uint64_t n) {
    // Lemire's rejection: reject the few values that would make some results more likely.
    const uint64_t limit = (0 - n) % n;  // 2^64 mod n
    uint64_t x;
    do x = next_u64();
    while (x < limit);
    return x % n;
}

}  // namespace patchgrad
