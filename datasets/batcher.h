// batcher.h — which images make up batch `step` of epoch `epoch`, reproducibly.
//
// Like torch.utils.data.DataLoader(shuffle=True) reduced to the part that matters for
// exact resume: the order of epoch e is a seeded permutation that depends only on
// (seed, e), not on a generator that advanced through earlier epochs. A run resumed at
// (epoch, step) therefore rebuilds the very same batches without any saved RNG state.
// Within an epoch every image appears exactly once: the last batch is smaller, unless
// drop_last asks to drop that incomplete batch (its images are different ones each epoch).
//
// derive_seed gives the other per-step random streams the same property: the trainer draws
// the augmentation of batch (epoch, step) from Rng(derive_seed(seed, {epoch, step})).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace patchgrad {

// A seed for the stream named by `parts` (e.g. {epoch, step}), well mixed, so that nearby
// seeds and parts give unrelated streams. The same inputs always give the same value.
uint64_t derive_seed(uint64_t seed, std::initializer_list<uint64_t> parts);

class Batcher {
public:
    // Shuffled batches of `batch_size` indices into a set of `set_size` images.
    Batcher(int64_t set_size, int64_t batch_size, uint64_t seed, bool drop_last = false);
    // The set in order, batch after batch, last one smaller: for evaluation.
    static Batcher sequential(int64_t set_size, int64_t batch_size);

    int64_t set_size() const { return set_size_; }
    int64_t batch_size() const { return batch_size_; }
    bool drop_last() const { return drop_last_; }
    int64_t num_batches() const;  // per epoch

    // The order of the whole set in `epoch` (>= 0): a permutation of 0..set_size-1.
    std::vector<int64_t> epoch_order(int64_t epoch) const;
    // The indices of batch `step` (0 <= step < num_batches()) of an order from epoch_order.
    std::vector<int64_t> batch(const std::vector<int64_t>& order, int64_t step) const;
    // The same from scratch (rebuilds the epoch's order: O(set_size)), e.g. after a resume.
    std::vector<int64_t> batch(int64_t epoch, int64_t step) const;

private:
    Batcher(int64_t set_size, int64_t batch_size, uint64_t seed, bool drop_last, bool shuffle);

    int64_t set_size_;
    int64_t batch_size_;
    uint64_t seed_;
    bool drop_last_;
    bool shuffle_;
};

}  // namespace patchgrad
