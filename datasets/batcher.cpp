// batcher.cpp — per-epoch seeded permutations cut into batches, and derive_seed.
#include "patchgrad/datasets/batcher.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "patchgrad/autograd/check.h"
#include "patchgrad/autograd/rng.h"

namespace patchgrad {

namespace {
// splitmix64's finaliser: every input bit affects every output bit.
uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
}  // namespace

uint64_t derive_seed(uint64_t seed, std::initializer_list<uint64_t> parts) {
    uint64_t h = mix64(seed + kGolden);
    for (uint64_t part : parts) h = mix64(h + kGolden + mix64(part));
    return h;
}

Batcher::Batcher(int64_t set_size, int64_t batch_size, uint64_t seed, bool drop_last)
    : Batcher(set_size, batch_size, seed, drop_last, true) {}

Batcher Batcher::sequential(int64_t set_size, int64_t batch_size) {
    return Batcher(set_size, batch_size, 0, false, false);
}

Batcher::Batcher(int64_t set_size, int64_t batch_size, uint64_t seed, bool drop_last, bool shuffle)
    : set_size_(set_size), batch_size_(batch_size), seed_(seed), drop_last_(drop_last), shuffle_(shuffle) {
    check(set_size >= 1, "Batcher: set size ", set_size, " must be >= 1");
    check(batch_size >= 1, "Batcher: batch size ", batch_size, " must be >= 1");
    check(!drop_last || set_size >= batch_size, "Batcher: drop_last with ", set_size, " images and batch size ",
          batch_size, " leaves no batch; use a smaller batch or keep the last batch");
}

int64_t Batcher::num_batches() const {
    // Rounded up without forming set_size + batch_size - 1, which a huge batch would overflow.
    return set_size_ / batch_size_ + (!drop_last_ && set_size_ % batch_size_ != 0 ? 1 : 0);
}

std::vector<int64_t> Batcher::epoch_order(int64_t epoch) const {
    check(epoch >= 0, "Batcher: epoch ", epoch, " must be >= 0");
    std::vector<int64_t> order(set_size_);
    std::iota(order.begin(), order.end(), int64_t{0});
    if (!shuffle_) return order;
    // Fisher–Yates: each of the n! orders equally likely.
    Rng rng(derive_seed(seed_, {static_cast<uint64_t>(epoch)}));
    for (int64_t i = set_size_ - 1; i > 0; --i) std::swap(order[i], order[rng.below(static_cast<uint64_t>(i) + 1)]);
    return order;
}

std::vector<int64_t> Batcher::batch(const std::vector<int64_t>& order, int64_t step) const {
    check(static_cast<int64_t>(order.size()) == set_size_, "Batcher::batch: an order of ", order.size(),
          " indices for a set of ", set_size_, " images");
    const int64_t batches = num_batches();
    check(step >= 0 && step < batches, "Batcher::batch: step ", step, " is out of range; an epoch has ", batches,
          " batches");
    const int64_t begin = step * batch_size_;
    const int64_t end = std::min(begin + batch_size_, set_size_);
    return std::vector<int64_t>(order.begin() + begin, order.begin() + end);
}

std::vector<int64_t> Batcher::batch(int64_t epoch, int64_t step) const { return batch(epoch_order(epoch), step); }

}  // namespace patchgrad
