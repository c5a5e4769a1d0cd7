// parallel_for, and the promise that the thread count changes speed, never results: every
// op that uses threads gives the same bits with 1, 2 and 3 threads (a whole ViT is checked in
// tests/vit/test_vision_transformer.cpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "autograd/determinism_util.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("parallel: parallel_for covers every index exactly once, in chunks of at least grain",
          "[parallel][ex:parallel-chunks]") {
    for (int threads : {1, 2, 3, 5}) {
        ThreadCount guard(threads);
        for (int64_t n : {0, 1, 7, 100, 1001}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            std::atomic<int> chunks{0};
            parallel_for(n, 10, [&](int64_t begin, int64_t end) {
                ++chunks;
                REQUIRE(begin < end);
                for (int64_t i = begin; i < end; ++i) ++hits[i];
            });
            for (int64_t i = 0; i < n; ++i) REQUIRE(hits[i] == 1);
            REQUIRE(chunks <= std::max<int64_t>(1, std::min<int64_t>(threads, n / 10)));
        }
    }
}

TEST_CASE("parallel: balanced_bins puts each task in one bin, and parallel_for's chunks of bins are about equal",
          "[parallel]") {
    // cifar-tiny's parameters as its optimizer lists them: the weight matrices (patch embedding, six
    // blocks' qkv, projection and MLP, head), then the biases, norms and embeddings.
    std::vector<int64_t> sizes = {48 * 128};
    for (int block = 0; block < 6; ++block)
        for (const int64_t s : {384 * 128, 128 * 128, 256 * 128, 128 * 256}) sizes.push_back(s);
    sizes.push_back(10 * 128);
    for (const int64_t s : {128, 128, 65 * 128}) sizes.push_back(s);
    for (int block = 0; block < 6; ++block)
        for (const int64_t s : {128, 128, 384, 128, 128, 128, 256, 128}) sizes.push_back(s);
    for (const int64_t s : {128, 128, 10}) sizes.push_back(s);
    const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
    const int64_t largest = *std::max_element(sizes.begin(), sizes.end());

    const std::vector<std::vector<int64_t>> bins = balanced_bins(sizes, 32);
    REQUIRE(bins.size() == 32);
    std::vector<int> seen(sizes.size(), 0);
    for (const std::vector<int64_t>& bin : bins)
        for (const int64_t i : bin) ++seen[i];
    for (const int count : seen) REQUIRE(count == 1);
    // parallel_for's chunks at T threads: ceil(32 / T) consecutive bins each. None exceeds its even
    // share by more than the largest task. (Runs of the parameters in list order would: the first
    // of two threads would get 99% of the work; so would the bins unfolded, 77%.)
    for (const int64_t threads : {2, 3, 4, 8, 16}) {
        INFO(threads << " threads");
        const int64_t chunk = (32 + threads - 1) / threads;
        for (int64_t c0 = 0; c0 < 32; c0 += chunk) {
            int64_t sum = 0;
            for (int64_t b = c0; b < std::min<int64_t>(32, c0 + chunk); ++b)
                for (const int64_t i : bins[b]) sum += sizes[i];
            CHECK(sum <= total / threads + largest);
        }
    }
    // Fewer tasks than bins: one each. Equal sizes: as many in each bin.
    REQUIRE(balanced_bins({5, 1, 3}, 8) == std::vector<std::vector<int64_t>>{{0}, {1}, {2}});
    for (const std::vector<int64_t>& bin : balanced_bins(std::vector<int64_t>(64, 7), 32)) REQUIRE(bin.size() == 2);
    REQUIRE(balanced_bins({}, 8).empty());
    require_error([] { balanced_bins({1, 2}, 0); }, {"balanced_bins", "at least one bin", "0"});
}

TEST_CASE("parallel: sum_rows adds each row once, in fixed blocks of rows added in block order, for any thread count",
          "[parallel]") {
    Rng rng(17);
    // Below one block, one block exactly and beyond, the most blocks exactly and beyond (larger blocks).
    const int64_t most = kSumRowBlocks * kSumRowMin;
    for (int64_t rows : {int64_t(0), int64_t(1), kSumRowMin - 1, kSumRowMin, kSumRowMin + 1, int64_t(1000), most,
                         most + 1, int64_t(8320)})
        for (int64_t width : {0, 1, 5}) {
            INFO(rows << " rows of width " << width);
            const int64_t block = sum_row_block(rows);
            CHECK(block >= kSumRowMin);
            CHECK((rows + block - 1) / block <= kSumRowBlocks);
            std::vector<real> x(static_cast<size_t>(rows * width));
            for (real& v : x) v = static_cast<real>(rng.uniform(-1, 1));
            // The documented order: each block's rows in order from zero, then the blocks in order.
            std::vector<real> expected(static_cast<size_t>(width), real(0));
            for (int64_t b0 = 0; b0 < rows; b0 += block) {
                std::vector<real> sum(static_cast<size_t>(width), real(0));
                for (int64_t r = b0; r < std::min(rows, b0 + block); ++r)
                    for (int64_t j = 0; j < width; ++j) sum[j] += x[r * width + j];
                for (int64_t j = 0; j < width; ++j) expected[j] += sum[j];
            }
            for (int threads : {1, 2, 3, 8, 16}) {
                ThreadCount guard(threads);
                std::vector<int> seen(static_cast<size_t>(rows), 0);  // blocks touch disjoint rows
                std::atomic<bool> aligned{true};                      // (REQUIRE is not for worker threads)
                const std::vector<real> sum = sum_rows(rows, width, [&](int64_t r0, int64_t r1, real* acc) {
                    if (r0 % block != 0 || r1 - r0 > block) aligned = false;
                    for (int64_t r = r0; r < r1; ++r) {
                        ++seen[r];
                        for (int64_t j = 0; j < width; ++j) acc[j] += x[r * width + j];
                    }
                });
                REQUIRE(aligned);
                REQUIRE(sum == expected);
                if (width > 0)
                    for (int64_t r = 0; r < rows; ++r) REQUIRE(seen[r] == 1);
            }
        }
}

TEST_CASE(
    "parallel: RowSums gives sum_rows's bits however its rows arrive: in order, split over threads, "
    "out of order, in part or not at all",
    "[parallel]") {
    Rng rng(23);
    for (int64_t rows : {int64_t(0), int64_t(1), kSumRowMin + 3, int64_t(1000), int64_t(8320)})
        for (int64_t width : {0, 1, 5}) {
            std::vector<real> x(static_cast<size_t>(rows * width));
            for (real& v : x) v = static_cast<real>(rng.uniform(-1, 1));
            const auto add_rows = [&](int64_t r0, int64_t r1, real* acc) {
                for (int64_t r = r0; r < r1; ++r)
                    for (int64_t j = 0; j < width; ++j) acc[j] += x[r * width + j];
            };
            const std::vector<real> expected = sum_rows(rows, width, add_rows);
            // Ranges of 7 rows (not a divisor of any block), taken in the orders below.
            const int64_t ranges = (rows + 6) / 7;
            const auto take_range = [&](RowSums& sums, int64_t i) { sums.take(7 * i, std::min(rows, 7 * i + 7)); };
            for (int threads : {1, 2, 3, 8, 16}) {
                INFO(rows << " rows of width " << width << ", " << threads << " threads");
                ThreadCount guard(threads);
                RowSums in_order(rows, width, add_rows), split(rows, width, add_rows), backwards(rows, width, add_rows),
                    half(rows, width, add_rows), none(rows, width, add_rows), once(rows, width, add_rows);
                for (int64_t i = 0; i < ranges; ++i) take_range(in_order, i);
                parallel_for(ranges, 1, [&](int64_t i0, int64_t i1) {  // as a matrix product's rows_done
                    for (int64_t i = i0; i < i1; ++i) take_range(split, i);
                });
                for (int64_t i = ranges - 1; i >= 0; --i) take_range(backwards, i);
                for (int64_t i = 0; i < ranges; i += 2) take_range(half, i);
                once.take(0, rows);
                CHECK(in_order.total() == expected);
                CHECK(split.total() == expected);
                CHECK(backwards.total() == expected);
                CHECK(half.total() == expected);
                CHECK(none.total() == expected);
                CHECK(once.total() == expected);
            }
        }
}

TEST_CASE("parallel: RowSums takes the rows of a block that arrive in order, and sums again only the rest",
          "[parallel]") {
    const int64_t rows = 100, block = sum_row_block(rows);
    std::vector<int> added(static_cast<size_t>(rows), 0);
    RowSums sums(rows, 1, [&](int64_t r0, int64_t r1, real* acc) {
        for (int64_t r = r0; r < r1; ++r) ++added[r], acc[0] += real(1);
    });
    sums.take(0, block + 1);          // the first block, and the second's first row
    sums.take(block + 2, 2 * block);  // the rest of the second block, out of order: left for total()
    for (int64_t r = 0; r < block + 1; ++r) REQUIRE(added[r] == 1);
    for (int64_t r = block + 1; r < rows; ++r) REQUIRE(added[r] == 0);
    REQUIRE(sums.total() == std::vector<real>{real(rows)});
    for (int64_t r = 0; r < block; ++r) REQUIRE(added[r] == 1);
    for (int64_t r = block; r < 2 * block; ++r) REQUIRE(added[r] == (r == block ? 2 : 1));
    for (int64_t r = 2 * block; r < rows; ++r) REQUIRE(added[r] == 1);
}

TEST_CASE("parallel: a LoopRecorder names a sum_rows loop by the line that called sum_rows", "[parallel]") {
    ThreadCount guard(2);
    LoopRecorder recorder;
    const int line = __LINE__ + 1;
    const std::vector<real> sum = sum_rows(100, 1, [](int64_t r0, int64_t r1, real* acc) { acc[0] += real(r1 - r0); });
    REQUIRE(sum == std::vector<real>{100});
    REQUIRE(recorder.loops().size() == 1);
    CHECK(recorder.loops()[0].file.find("test_parallel.cpp") != std::string::npos);
    CHECK(recorder.loops()[0].line == line);
}

TEST_CASE("parallel: a nested parallel_for runs inside its chunk, exceptions reach the caller",
          "[parallel][errors][ex:parallel-chunks]") {
    ThreadCount guard(2);
    std::vector<std::atomic<int>> hits(400);
    parallel_for(4, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
            parallel_for(100, 1, [&](int64_t b2, int64_t e2) {
                for (int64_t j = b2; j < e2; ++j) ++hits[i * 100 + j];
            });
    });
    for (auto& h : hits) REQUIRE(h == 1);
    REQUIRE_THROWS_WITH(parallel_for(100, 1,
                                     [](int64_t b, int64_t) {
                                         if (b > 0) throw std::runtime_error("chunk failed");
                                     }),
                        "chunk failed");
    // The pool still works afterwards.
    std::atomic<int64_t> sum{0};
    parallel_for(100, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    REQUIRE(sum == 100);
}

TEST_CASE("parallel: workers take loops back to back and after sleeping, on their own threads", "[parallel]") {
    // A waiting worker spins for a moment, then sleeps (parallel.cpp). Loops in quick
    // succession meet a spinning worker, loops after a pause a sleeping one; both must run
    // chunk 1 on the worker, and a lost wake-up would hang here.
    ThreadCount guard(2);
    const std::thread::id caller = std::this_thread::get_id();
    for (int pause_ms : {0, 0, 0, 5, 0, 20}) {
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        for (int loop = 0; loop < 500; ++loop) {
            std::vector<std::thread::id> ran_on(2);
            std::atomic<int64_t> covered{0};
            parallel_for(2, 1, [&](int64_t b, int64_t e) {
                ran_on[static_cast<size_t>(b)] = std::this_thread::get_id();
                covered += e - b;
            });
            REQUIRE(covered == 2);
            REQUIRE(ran_on[0] == caller);
            REQUIRE(ran_on[1] != caller);
        }
    }
}

TEST_CASE("parallel: set_num_threads rejects fewer than one thread", "[parallel][errors]") {
    require_error([] { set_num_threads(0); }, {"set_num_threads", "at least 1", "0"});
    REQUIRE(num_threads() == 1);
}

// --threads 2147483648 passed the flag check and reached set_num_threads as -2147483648.
TEST_CASE("parallel: set_num_threads rejects more than kMaxThreads", "[parallel][errors]") {
    require_error([] { set_num_threads(kMaxThreads + 1); }, {"set_num_threads", "at most 1024", "1025"});
    REQUIRE(num_threads() == 1);
}

TEST_CASE(
    "parallel: matmul, linear, gelu, layer_norm, softmax, elementwise ops and copies give the same bits for 1, 2, 3, "
    "8 and 16 threads",
    "[parallel][op:matmul][op:linear][op:gelu][op:layer_norm][op:softmax]") {
    Rng rng(3);
    for (const OpCase& c : threaded_op_cases(rng)) {
        INFO(c.name);
        require_same_bits_for_any_thread_count(c.f, c.inputs);
    }
}
