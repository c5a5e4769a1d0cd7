// Tests for datasets/batcher.cpp: per-epoch seeded batches and derive_seed.
#include "patchgrad/datasets/batcher.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "catch.h"
#include "test_util.h"

namespace patchgrad {

using namespace patchgrad::test;

TEST_CASE("datasets: Batcher covers every image once per epoch, last batch smaller", "[datasets][batcher]") {
    const Batcher batcher(10, 4, 42);
    REQUIRE(batcher.num_batches() == 3);
    for (int64_t epoch : {0, 1, 7}) {
        std::vector<int64_t> seen;
        std::vector<size_t> sizes;
        for (int64_t step = 0; step < batcher.num_batches(); ++step) {
            const std::vector<int64_t> b = batcher.batch(epoch, step);
            sizes.push_back(b.size());
            seen.insert(seen.end(), b.begin(), b.end());
        }
        REQUIRE(sizes == std::vector<size_t>{4, 4, 2});
        std::vector<int64_t> sorted = seen;
        std::sort(sorted.begin(), sorted.end());
        std::vector<int64_t> all(10);
        std::iota(all.begin(), all.end(), int64_t{0});
        REQUIRE(sorted == all);
        REQUIRE(seen == batcher.epoch_order(epoch));
    }
    REQUIRE(Batcher(12, 4, 1).num_batches() == 3);
    REQUIRE(Batcher(1, 4, 1).num_batches() == 1);
    // Rounding up must not form set_size + batch - 1: a huge batch is still one batch.
    REQUIRE(Batcher(10, std::numeric_limits<int64_t>::max(), 1).num_batches() == 1);
}

TEST_CASE("datasets: Batcher drop_last drops only the incomplete batch", "[datasets][batcher]") {
    const Batcher batcher(10, 4, 42, true);
    REQUIRE(batcher.num_batches() == 2);
    std::set<std::set<int64_t>> dropped;
    for (int64_t epoch = 0; epoch < 10; ++epoch) {
        std::set<int64_t> used;
        for (int64_t step = 0; step < 2; ++step) {
            const std::vector<int64_t> b = batcher.batch(epoch, step);
            REQUIRE(b.size() == 4);
            used.insert(b.begin(), b.end());
        }
        REQUIRE(used.size() == 8);
        std::set<int64_t> rest;
        for (int64_t i = 0; i < 10; ++i)
            if (!used.count(i)) rest.insert(i);
        dropped.insert(rest);
    }
    // Different images are left out in different epochs.
    REQUIRE(dropped.size() > 1);
    REQUIRE(Batcher(12, 4, 1, true).num_batches() == 3);
}

TEST_CASE("datasets: Batcher order depends only on (seed, epoch)", "[datasets][batcher]") {
    const Batcher a(1000, 64, 7), b(1000, 64, 7);
    // A fresh Batcher (a resumed run) rebuilds any batch without replaying earlier epochs.
    REQUIRE(a.batch(5, 3) == b.batch(5, 3));
    REQUIRE(a.batch(a.epoch_order(5), 3) == b.batch(5, 3));
    REQUIRE(a.epoch_order(0) != a.epoch_order(1));
    REQUIRE(a.epoch_order(0) != Batcher(1000, 64, 8).epoch_order(0));
    // The order does not depend on the batch size either: a shuffle of the set, cut into batches.
    REQUIRE(Batcher(1000, 10, 7).epoch_order(2) == a.epoch_order(2));
    std::vector<int64_t> identity(1000);
    std::iota(identity.begin(), identity.end(), int64_t{0});
    REQUIRE(a.epoch_order(0) != identity);
}

TEST_CASE("datasets: Batcher::sequential walks the set in order", "[datasets][batcher]") {
    const Batcher eval = Batcher::sequential(7, 3);
    REQUIRE(eval.num_batches() == 3);
    REQUIRE(eval.batch(0, 0) == std::vector<int64_t>{0, 1, 2});
    REQUIRE(eval.batch(4, 2) == std::vector<int64_t>{6});
    REQUIRE_FALSE(eval.drop_last());
}

TEST_CASE("datasets: derive_seed separates streams", "[datasets][batcher]") {
    REQUIRE(derive_seed(1, {2, 3}) == derive_seed(1, {2, 3}));
    std::set<uint64_t> seeds;
    for (uint64_t seed : {0, 1})
        for (uint64_t epoch : {0, 1, 2})
            for (uint64_t step : {0, 1, 2}) seeds.insert(derive_seed(seed, {epoch, step}));
    REQUIRE(seeds.size() == 18);
    REQUIRE(derive_seed(1, {2, 3}) != derive_seed(1, {3, 2}));
    REQUIRE(derive_seed(1, {0}) != derive_seed(1, {}));
    REQUIRE(derive_seed(1, {0}) != derive_seed(1, {0, 0}));
}

TEST_CASE("datasets: Batcher errors", "[datasets][batcher][errors]") {
    require_error([] { Batcher(0, 4, 1); }, {"Batcher", "set size 0"});
    require_error([] { Batcher(10, 0, 1); }, {"Batcher", "batch size 0"});
    require_error([] { Batcher(3, 4, 1, true); }, {"Batcher", "drop_last with 3 images and batch size 4"});
    const Batcher batcher(10, 4, 1);
    require_error([&] { batcher.batch(0, 3); }, {"Batcher::batch", "step 3", "3 batches"});
    require_error([&] { batcher.batch(0, -1); }, {"step -1"});
    require_error([&] { batcher.epoch_order(-1); }, {"Batcher", "epoch -1"});
    require_error([&] { batcher.batch(std::vector<int64_t>{0, 1}, 0); }, {"Batcher::batch", "order of 2", "10 images"});
}

}  // namespace patchgrad
