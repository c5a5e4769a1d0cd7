// attention_backward (chapter 7's exercise attention-backward): the hand-derived gradients of
// single-head scaled dot-product attention, against autograd and against central differences.
#include <cmath>
#include <vector>

#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/layers/attention_backward.h"
#include "test_util.h"

namespace patchgrad {
using namespace patchgrad::test;

namespace {

// O = softmax(q k^T / sqrt(d)) v through autograd's ops: the reference for the gradients.
Tensor attention_by_ops(const Tensor& q, const Tensor& k, const Tensor& v) {
    const Tensor scores = matmul(q, transpose(k, -2, -1)) / std::sqrt(real(q.size(-1)));
    return matmul(softmax(scores, -1), v);
}

void add_into_grad(const Tensor& x, const Tensor& g) {
    if (!x.requires_grad()) return;
    REQUIRE(g.shape() == x.shape());
    real* dx = x.grad_data();
    for (int64_t i = 0; i < x.numel(); ++i) dx[i] += g.data()[i];
}

// The same forward as one test-only op whose backward is attention_backward, so that a
// gradient check measures the hand-written gradients (and reports their error to the grader).
Tensor attention_by_hand(const Tensor& q, const Tensor& k, const Tensor& v) {
    Tensor out;
    {
        NoGradGuard no_grad;
        out = attention_by_ops(q, k, v);
    }
    record(out, "attention_by_hand", {q, k, v}, [q, k, v](Tensor& o) mutable {
        const AttentionGradients g = attention_backward(q, k, v, o.grad());
        add_into_grad(q, g.dq);
        add_into_grad(k, g.dk);
        add_into_grad(v, g.dv);
    });
    return out;
}

}  // namespace

TEST_CASE("attention_backward: dq, dk, dv match autograd's gradients",
          "[layer:attention_backward][ex:attention-backward]") {
    Rng rng(70);
    struct Case {
        Shape q, k, v;
    };
    // N queries, M keys of d dimensions, values of e: square and not, batched, one token.
    for (const Case& c : {Case{{5, 4}, {7, 4}, {7, 3}}, Case{{6, 8}, {6, 8}, {6, 8}},
                          Case{{2, 3, 5, 4}, {2, 3, 6, 4}, {2, 3, 6, 2}}, Case{{1, 3}, {1, 3}, {1, 2}}}) {
        INFO("q " << shape_str(c.q) << ", k " << shape_str(c.k) << ", v " << shape_str(c.v));
        Tensor q = rand_tensor(c.q, rng, -1.5, 1.5), k = rand_tensor(c.k, rng, -1.5, 1.5), v = rand_tensor(c.v, rng);
        Tensor out = attention_by_ops(q, k, v);
        const Tensor d_out = rand_tensor(out.shape(), rng, -1, 1, false);
        out.backward(d_out);

        const AttentionGradients g = attention_backward(q, k, v, d_out);
        REQUIRE(g.dq.defined());
        REQUIRE(g.dk.defined());
        REQUIRE(g.dv.defined());
        require_close(g.dq, q.grad(), 1e-12, "dq");
        require_close(g.dk, k.grad(), 1e-12, "dk");
        require_close(g.dv, v.grad(), 1e-12, "dv");
        REQUIRE_FALSE(g.dq.requires_grad());  // plain values, no graph
    }
}

TEST_CASE("attention_backward: gradcheck of q, k and v",
          "[layer:attention_backward][gradcheck][ex:attention-backward]") {
    Rng rng(71);
    const auto op = [](const std::vector<Tensor>& in) { return attention_by_hand(in[0], in[1], in[2]); };
    check_gradients(op, {rand_tensor({4, 6}, rng), rand_tensor({5, 6}, rng), rand_tensor({5, 3}, rng)}, 72);
    check_gradients(op, {rand_tensor({2, 3, 4}, rng), rand_tensor({2, 3, 4}, rng), rand_tensor({2, 3, 4}, rng)}, 73);
    // Large scores: nearly one-hot rows, where a softmax backward without the subtraction fails.
    check_gradients(op, {rand_tensor({3, 4}, rng, -4, 4), rand_tensor({6, 4}, rng, -4, 4), rand_tensor({6, 2}, rng)},
                    74);
}

TEST_CASE("attention_backward: one key gives A = 1, so dq = dk = 0 and dv = sum of dO",
          "[layer:attention_backward][ex:attention-backward]") {
    Rng rng(75);
    const Tensor q = rand_tensor({3, 2}, rng, -1, 1, false), k = rand_tensor({1, 2}, rng, -1, 1, false);
    const Tensor v = rand_tensor({1, 4}, rng, -1, 1, false), d_out = rand_tensor({3, 4}, rng, -1, 1, false);
    const AttentionGradients g = attention_backward(q, k, v, d_out);
    require_close(g.dq, Tensor::zeros({3, 2}), 1e-14, "dq");
    require_close(g.dk, Tensor::zeros({1, 2}), 1e-14, "dk");
    require_close(g.dv, sum(d_out, 0, true), 1e-14, "dv");
}

}  // namespace patchgrad
