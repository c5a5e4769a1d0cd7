// Broadcasting in the binary elementwise ops, broadcast_shapes and broadcast_to.
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/broadcast.h"
#include "patchgrad/autograd/ops.h"
#include "test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {

// Flat offset in a tensor of shape `s` of the output position `idx`, NumPy style: `s` is
// aligned at the right of idx and its 1-sized axes always read element 0.
int64_t broadcast_offset(const Shape& s, const std::vector<int64_t>& idx) {
    const size_t shift = idx.size() - s.size();
    int64_t offset = 0;
    for (size_t k = 0; k < s.size(); ++k) offset = offset * s[k] + (s[k] == 1 ? 0 : idx[k + shift]);
    return offset;
}

// The obvious slow reference: for every output position, unravel its multi-index and look
// up both operands.
Tensor reference_binary(const Tensor& a, const Tensor& b, const Shape& out_shape,
                        const std::function<real(real, real)>& f) {
    Tensor out = Tensor::zeros(out_shape);
    std::vector<int64_t> idx(out_shape.size());
    for (int64_t flat = 0; flat < out.numel(); ++flat) {
        int64_t rest = flat;
        for (size_t k = out_shape.size(); k-- > 0;) {
            idx[k] = rest % out_shape[k];
            rest /= out_shape[k];
        }
        out.data()[flat] = f(a.data()[broadcast_offset(a.shape(), idx)], b.data()[broadcast_offset(b.shape(), idx)]);
    }
    return out;
}

struct BinaryOp {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<real(real, real)> f;
};

const std::vector<BinaryOp>& binary_ops() {
    static const std::vector<BinaryOp> ops = {
        {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, [](real x, real y) { return x + y; }},
        {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, [](real x, real y) { return x - y; }},
        {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, [](real x, real y) { return x * y; }},
        {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, [](real x, real y) { return x / y; }},
    };
    return ops;
}

struct BroadcastCase {
    Shape a, b, out;
};

// Covers: a stretched middle axis against a missing leading one, bias-style [D] operands on
// either side, [1] and [] scalars on either side, both operands stretched, prime sizes.
const std::vector<BroadcastCase>& broadcast_cases() {
    static const std::vector<BroadcastCase> cases = {
        {{3, 1, 5}, {4, 5}, {3, 4, 5}},
        {{4, 5}, {3, 1, 5}, {3, 4, 5}},
        {{7, 11}, {11}, {7, 11}},
        {{11}, {7, 11}, {7, 11}},
        {{7, 11}, {1, 11}, {7, 11}},
        {{1}, {2, 3}, {2, 3}},
        {{2, 3}, {1}, {2, 3}},
        {{}, {2, 3}, {2, 3}},
        {{2, 3}, {}, {2, 3}},
        {{}, {}, {}},
        {{4, 1}, {1, 5}, {4, 5}},
        {{6, 5}, {6, 1}, {6, 5}},
        {{3, 1, 5}, {3, 1, 5}, {3, 1, 5}},
        {{2, 3, 1, 5}, {3, 4, 1}, {2, 3, 4, 5}},
        {{2, 1, 3}, {2, 3}, {2, 2, 3}},
    };
    return cases;
}

}  // namespace

TEST_CASE("broadcast_shapes: aligns at the right and stretches 1-sized axes",
          "[op:broadcast_shapes][forward][ex:broadcast-shapes]") {
    for (const auto& c : broadcast_cases()) {
        INFO(shape_str(c.a) << " and " << shape_str(c.b));
        REQUIRE(broadcast_shapes(c.a, c.b, "add") == c.out);
    }
    REQUIRE(broadcast_shapes({0, 3}, {1, 3}, "add") == Shape{0, 3});
}

TEST_CASE("broadcast_shapes: incompatible shapes name the op and both shapes",
          "[op:broadcast_shapes][errors][ex:broadcast-shapes]") {
    require_error([] { broadcast_shapes({2, 3}, {4}, "add"); }, {"add: shapes [2, 3] and [4] cannot be broadcast"});
    require_error([] { broadcast_shapes({3, 1, 5}, {4, 6}, "mul"); }, {"mul", "[3, 1, 5]", "[4, 6]"});
    require_error([] { broadcast_shapes({2}, {3}, "sub"); }, {"sub", "[2]", "[3]"});
}

TEST_CASE("add/sub/mul/div: broadcast forward matches an index-by-index reference",
          "[op:add][op:sub][op:mul][op:div][forward][ex:broadcast-shapes]") {
    Rng rng(10);
    for (const auto& op : binary_ops())
        for (const auto& c : broadcast_cases()) {
            INFO(op.name << ": " << shape_str(c.a) << " and " << shape_str(c.b));
            Tensor a = rand_tensor(c.a, rng, -1, 1, false);
            Tensor b = rand_tensor(c.b, rng, 0.5, 2, false);
            Tensor out = op.op(a, b);
            REQUIRE(out.shape() == c.out);
            require_close(out, reference_binary(a, b, c.out, op.f), 0);
        }
}

TEST_CASE("add: broadcast forward by hand, bias along the last axis and a column",
          "[op:add][forward][ex:broadcast-shapes]") {
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
    require_close(add(x, Tensor::from_vector({3}, {10, 20, 30})), Tensor::from_vector({2, 3}, {11, 22, 33, 14, 25, 36}),
                  0);
    require_close(add(x, Tensor::from_vector({2, 1}, {100, 200})),
                  Tensor::from_vector({2, 3}, {101, 102, 103, 204, 205, 206}), 0);
    require_close(add(Tensor::from_vector({2, 1}, {1, 2}), Tensor::from_vector({3}, {10, 20, 30})),
                  Tensor::from_vector({2, 3}, {11, 21, 31, 12, 22, 32}), 0);
}

TEST_CASE("mul: the gradient of a broadcast operand sums over the stretched axes",
          "[op:mul][gradcheck][ex:broadcast-backward]") {
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor scale = Tensor::from_vector({3}, {1, 1, 1}, true);
    Tensor row = Tensor::from_vector({2, 1}, {1, 1}, true);
    Tensor s = Tensor::scalar(1, true);
    mul(mul(mul(x, scale), row), s).backward(Tensor::ones({2, 3}));
    require_close(scale.grad(), Tensor::from_vector({3}, {5, 7, 9}), 0);
    require_close(row.grad(), Tensor::from_vector({2, 1}, {6, 15}), 0);
    require_close(s.grad(), Tensor::scalar(21), 0);
}

TEST_CASE("add/sub/mul/div: gradcheck with broadcasting",
          "[op:add][op:sub][op:mul][op:div][gradcheck][ex:broadcast-backward]") {
    Rng rng(11);
    uint64_t seed = 1;
    for (const auto& op : binary_ops())
        for (const auto& c : broadcast_cases()) {
            INFO(op.name << ": " << shape_str(c.a) << " and " << shape_str(c.b));
            Tensor a = rand_tensor(c.a, rng);
            Tensor b = rand_tensor(c.b, rng, 0.5, 2);
            auto f = op.op;
            check_gradients([f](const std::vector<Tensor>& in) { return f(in[0], in[1]); }, {a, b}, seed++);
        }
}

TEST_CASE("add/sub/mul/div: a stretched operand used on both sides",
          "[op:add][op:sub][op:mul][op:div][gradcheck][ex:broadcast-backward]") {
    Rng rng(12);
    for (const auto& op : binary_ops()) {
        INFO(op.name);
        Tensor v = rand_tensor({5}, rng, 0.5, 2);
        Tensor m = rand_tensor({3, 5}, rng, 0.5, 2);
        auto f = op.op;
        check_gradients([f](const std::vector<Tensor>& in) { return f(f(in[0], in[1]), in[0]); }, {v, m}, 3);
    }
}

TEST_CASE("add/sub/mul/div: incompatible shapes throw naming both shapes", "[op:add][op:sub][op:mul][op:div][errors]") {
    for (const auto& op : binary_ops()) {
        const std::string name = op.name;
        auto f = op.op;
        require_error(
            [f] {
                f(Tensor::zeros({2, 3}), Tensor::zeros({4}));
            },
            {name + ": shapes [2, 3] and [4] cannot be broadcast"});
        require_error([f] { f(Tensor::zeros({3, 1, 5}), Tensor::zeros({4, 6})); }, {name, "[3, 1, 5]", "[4, 6]"});
        require_error([f] { f(Tensor::zeros({7, 11}), Tensor::zeros({7})); }, {name, "[7, 11]", "[7]"});
    }
    require_error([] { Tensor::zeros({2, 3}) + Tensor::zeros({4}); }, {"add", "[2, 3]", "[4]"});
}

TEST_CASE("for_each_row: blocks of columns give each element of a stretched operand to one thread, rows in order",
          "[op:add][parallel]") {
    // [64, 65, 32] + [1, 65, 32]: 64 rows of 2,080, b stretched along the rows and moving along
    // each: a position embedding's shape. Its gradient may take blocks of columns.
    const Broadcast bc = plan_broadcast({64, 65, 32}, {1, 65, 32}, {64, 65, 32});
    REQUIRE(bc.rows == 64);
    REQUIRE(bc.inner == 65 * 32);
    struct Run {
        std::thread::id thread;
        int64_t ia, ib, io, n;
    };
    std::vector<Run> runs;
    std::mutex mutex;
    {
        ThreadCount guard(3);
        LoopRecorder recorder;
        for_each_row(bc, RowSplit::Columns, [&](int64_t ia, int64_t ib, int64_t io, int64_t n) {
            std::lock_guard<std::mutex> lock(mutex);
            runs.push_back({std::this_thread::get_id(), ia, ib, io, n});
        });
        REQUIRE(recorder.loops().size() == 1);
        CHECK(loop_tasks(recorder.loops()[0].n, recorder.loops()[0].grain) >= 4);
    }
    std::vector<int> visits(64 * 65 * 32, 0);
    std::vector<int64_t> last_row(65 * 32, -1);  // of b's element, in the order its thread met it
    std::map<int64_t, std::thread::id> owner;    // b's element -> the one thread that sums it
    std::map<std::thread::id, int> threads;
    for (const Run& r : runs) {  // (runs of one thread are in its order of calls)
        REQUIRE(r.ia == r.io);   // a moves along every axis, like the output
        const int64_t row = r.io / bc.inner, column = r.io % bc.inner;
        REQUIRE(r.ib == column);
        ++threads[r.thread];
        for (int64_t j = 0; j < r.n; ++j) {
            ++visits[r.io + j];
            const auto [it, fresh] = owner.emplace(r.ib + j, r.thread);
            REQUIRE((fresh || it->second == r.thread));
            REQUIRE(last_row[r.ib + j] < row);
            last_row[r.ib + j] = row;
        }
    }
    for (int v : visits) REQUIRE(v == 1);
    CHECK(threads.size() >= 2);
}

TEST_CASE("broadcast_to: forward matches the reference", "[op:broadcast_to][forward]") {
    Rng rng(13);
    const std::vector<std::pair<Shape, Shape>> cases = {
        {{1, 1, 4}, {2, 3, 4}}, {{3, 1, 5}, {2, 3, 4, 5}}, {{}, {2, 3}}, {{5}, {5}}, {{7, 1}, {7, 11}}, {{1}, {1}},
    };
    for (const auto& [from, to] : cases) {
        INFO(shape_str(from) << " -> " << shape_str(to));
        Tensor a = rand_tensor(from, rng, -1, 1, false);
        Tensor zeros = Tensor::zeros(to);
        require_close(broadcast_to(a, to), reference_binary(a, zeros, to, [](real x, real) { return x; }), 0);
    }
    require_close(broadcast_to(Tensor::from_vector({1, 1, 2}, {7, 8}), {2, 1, 2}),
                  Tensor::from_vector({2, 1, 2}, {7, 8, 7, 8}), 0);
}

TEST_CASE("broadcast_to: gradcheck, the class token [1, 1, D] -> [B, 1, D] and others",
          "[op:broadcast_to][gradcheck]") {
    Rng rng(14);
    const std::vector<std::pair<Shape, Shape>> cases = {
        {{1, 1, 4}, {3, 1, 4}}, {{3, 1, 5}, {2, 3, 4, 5}}, {{}, {2, 3}}, {{5}, {5}},
        {{7, 1}, {7, 11}},      {{11}, {2, 7, 11}},
    };
    uint64_t seed = 1;
    for (const auto& [from, to] : cases) {
        INFO(shape_str(from) << " -> " << shape_str(to));
        const Shape target = to;
        check_gradients([target](const std::vector<Tensor>& in) { return broadcast_to(in[0], target); },
                        {rand_tensor(from, rng)}, seed++);
    }
}

TEST_CASE("broadcast_to: a shape it cannot stretch to throws naming both shapes", "[op:broadcast_to][errors]") {
    require_error([] { broadcast_to(Tensor::zeros({2, 3}), {3, 3}); }, {"broadcast_to", "[2, 3]", "[3, 3]"});
    require_error([] { broadcast_to(Tensor::zeros({2, 3}), {3}); }, {"broadcast_to", "[2, 3]", "[3]"});
    require_error([] { broadcast_to(Tensor::zeros({3}), {2, 4}); }, {"broadcast_to", "[3]", "[2, 4]"});
    require_error([] { broadcast_to(Tensor::zeros({2}), {1}); }, {"broadcast_to", "[2]", "[1]"});
}
