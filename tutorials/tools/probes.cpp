// probes.cpp — one probe per exercise (probe.h): what the grader measures of it, on inputs drawn
// from the seed. Each probe covers what the exercise's chapter asks for (every code path of the
// region), on small inputs, so that one runs in well under a second.
#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/gradcheck.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/optim/lr_schedule.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/layers/attention.h"
#include "patchgrad/layers/attention_backward.h"
#include "patchgrad/layers/linear.h"
#include "patchgrad/layers/sequential.h"
#include "patchgrad/layers/state_dict.h"
#include "patchgrad/vit/positional_encoding.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/vision_transformer.h"
#include "patchgrad/vit/vit_block.h"
#include "probe.h"
#include "tests/autograd/softplus_variants.h"

namespace patchgrad::grading {

namespace {

int64_t between(Rng& rng, int64_t low, int64_t high) {  // uniform in [low, high]
    return low + static_cast<int64_t>(rng.below(static_cast<uint64_t>(high - low + 1)));
}

Tensor leaf(const Shape& shape, Rng& rng, double low = -1, double high = 1) {
    return Tensor::uniform(shape, static_cast<real>(low), static_cast<real>(high), rng, true);
}

Tensor fixed(const Shape& shape, Rng& rng, double low = -1, double high = 1) {
    return Tensor::uniform(shape, static_cast<real>(low), static_cast<real>(high), rng, false);
}

// sum(y * w): a loss whose gradient with respect to y is w, a different weight per element.
Tensor weighted(const Tensor& y, const Tensor& w) { return sum(mul(y, w)); }

Shape random_shape(Rng& rng, int64_t min_dims, int64_t max_dims, int64_t max_size) {
    Shape s(static_cast<size_t>(between(rng, min_dims, max_dims)));
    for (int64_t& d : s) d = between(rng, 1, max_size);
    return s;
}

// ---- chapter 1 ----------------------------------------------------------------------------

void broadcast_shapes_probe(Probe& p) {
    for (int c = 0; c < 40; ++c) {
        const Shape a = random_shape(p.rng, 0, 4, 4);
        Shape b = a;
        for (int64_t& d : b) {  // stretch some axes, break others
            const uint64_t r = p.rng.below(6);
            if (r == 0) d = 1;
            if (r == 1) d = between(p.rng, 1, 4);
        }
        if (p.rng.below(3) == 0) b.erase(b.begin(), b.begin() + static_cast<int64_t>(p.rng.below(b.size() + 1)));
        const bool swap = p.rng.below(2) == 0;
        const Shape& x = swap ? b : a;
        const Shape& y = swap ? a : b;
        std::vector<double> out;
        try {
            const Shape s = broadcast_shapes(x, y, "probe");
            out.push_back(1);
            out.push_back(static_cast<double>(s.size()));
            for (int64_t d : s) out.push_back(static_cast<double>(d));
        } catch (const std::invalid_argument&) {
            out = {0};  // refused
        }
        p.exact("broadcast_shapes(" + shape_str(x) + ", " + shape_str(y) + "): 1 and the shape, or 0 if refused", out);
    }
    const Tensor a = fixed({2, 1, 4}, p.rng), b = fixed({3, 1}, p.rng);
    p.values("[2, 1, 4] * [3, 1]", mul(a, b));
}

void broadcast_backward_probe(Probe& p) {
    const std::vector<std::pair<Shape, Shape>> pairs = {{{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}},    {{5}, {}},
                                                        {{2, 3}, {2, 3}}, {{1, 3, 1}, {2, 1, 5}}, {{3, 1}, {3, 6}}};
    const char* ops[] = {"add", "sub", "mul", "div"};
    for (const auto& [sa, sb] : pairs)
        for (int op = 0; op < 4; ++op) {
            const Tensor a = leaf(sa, p.rng), b = op == 3 ? leaf(sb, p.rng, 0.5, 2) : leaf(sb, p.rng);
            const Tensor w = fixed(broadcast_shapes(sa, sb, "probe"), p.rng);
            p.gradients(std::string(ops[op]) + " " + shape_str(sa) + " " + shape_str(sb), {a, b}, {"da", "db"}, [=] {
                const Tensor y = op == 0 ? add(a, b) : op == 1 ? sub(a, b) : op == 2 ? mul(a, b) : div(a, b);
                return weighted(y, w);
            });
        }
}

// ---- chapter 2 ----------------------------------------------------------------------------

void backward_engine_probe(Probe& p) {
    // A graph with shared nodes: a tensor used twice, a diamond, a node two paths reach.
    for (int c = 0; c < 3; ++c) {
        const Tensor a = leaf({3, 4}, p.rng), b = leaf({4}, p.rng), s = leaf({}, p.rng);
        const Tensor w = fixed({3, 4}, p.rng);
        p.gradients("a graph with shared nodes", {a, b, s}, {"da", "db", "ds"}, [=] {
            const Tensor u = a * b;                       // used twice below
            const Tensor v = tanh(u) + u * s;             // a diamond through u
            const Tensor z = v * v + exp(u * real(0.5));  // v used twice
            return weighted(z, w) + sum(a) * s;
        });
    }
    // Deep: 100000 ops in a chain (a recursive walk overflows the stack).
    const Tensor x = leaf({2}, p.rng);
    p.gradients("a chain of 100000 ops", {x}, {"dx"}, [=] {
        Tensor y = x;
        for (int i = 0; i < 100000; ++i) y = y * real(1.0000001);
        return sum(y);
    });
    // Non-leaves: retain_grad keeps theirs; the graph is freed after backward().
    const Tensor a = leaf({3}, p.rng);
    Tensor mid = a * 2 + 1;
    mid.retain_grad();
    Tensor loss = sum(mid * mid);
    loss.backward();
    p.values("retain_grad: the gradient of a non-leaf", mid.grad());
    p.values("retain_grad: the leaf's gradient", a.grad());
    bool refused = false;
    try {
        loss.backward();
    } catch (const std::logic_error&) {
        refused = true;
    }
    p.exact("a second backward() through a freed graph is refused", {refused ? 1.0 : 0.0});
}

// ---- chapter 3 ----------------------------------------------------------------------------

void numerical_gradient_probe(Probe& p) {
    // A right gradient and a planted wrong one (one element's derivative doubled), all elements
    // and a sample of them.
    for (int wrong = 0; wrong < 2; ++wrong)
        for (int64_t sample : {int64_t(0), int64_t(5)}) {
            Tensor x = leaf({3, 4}, p.rng), w = fixed({3, 4}, p.rng);
            const int64_t bad = between(p.rng, 0, 11);
            const ScalarFunction f = [&, wrong, bad](const std::vector<Tensor>& in) {
                Tensor y = Tensor::from_vector(in[0].shape(), tanh(in[0]).to_vector());
                const Tensor xin = in[0];
                record(y, "probe_tanh", {xin}, [xin, wrong, bad](Tensor& o) mutable {
                    for (int64_t i = 0; i < xin.numel(); ++i) {
                        const real t = std::tanh(xin.data()[i]);
                        xin.grad_data()[i] += o.grad_data()[i] * (1 - t * t) * (wrong && i == bad ? 2 : 1);
                    }
                });
                return weighted(y, w);
            };
            GradcheckOptions options;
            options.max_elements_per_input = sample;
            options.seed = 11;
            const GradcheckResult r = gradcheck(f, {x}, options);
            const InputReport& in = r.inputs.at(0);
            const std::string what = std::string(wrong ? "a wrong" : "a right") + " gradient, " +
                                     (sample ? "5 elements sampled" : "every element");
            p.exact(what + ": passed, elements checked, failures",
                    {r.passed() ? 1.0 : 0.0, double(in.checked), double(in.failures)});
            if (wrong && sample == 0) {
                p.exact(what + ": the worst element", {double(in.worst_index)});
                p.values(what + ": its numeric derivative", {in.worst_numeric}, 1e-6);
            }
            p.values(what + ": the worst element's relative error (scaled by 1e6, to 1e-6)",
                     {std::min(in.max_rel_error, 1.0) * 1e6 + 1}, 1e-6);
        }
}

void softplus_gradcheck_probe(Probe& p) {
    const auto& variants = test::softplus_variants();
    for (size_t i = 0; i < variants.size(); ++i) {
        const bool accepted = softplus_gradient_is_right([i](const Tensor& x) { return test::softplus_variant(x, i); });
        p.exact(std::string("accepts softplus with ") + variants[i].name, {accepted ? 1.0 : 0.0});
    }
}

// ---- chapter 4 ----------------------------------------------------------------------------

void matmul_backward_probe(Probe& p) {
    const std::vector<std::pair<Shape, Shape>> pairs = {
        {{3, 4}, {4, 5}}, {{1, 6}, {6, 1}}, {{2, 3, 4}, {4, 5}}, {{2, 1, 3, 4}, {3, 4, 2}}, {{4, 3}, {2, 3, 2}}};
    for (const auto& [sa, sb] : pairs) {
        const Tensor a = leaf(sa, p.rng), b = leaf(sb, p.rng);
        const Tensor y = matmul(a, b);
        const Tensor w = fixed(y.shape(), p.rng);
        p.gradients("matmul " + shape_str(sa) + " @ " + shape_str(sb), {a, b}, {"dA", "dB"},
                    [=] { return weighted(matmul(a, b), w); });
    }
    const Tensor a = leaf({2, 3, 4}, p.rng), b = leaf({2, 5, 4}, p.rng), w = fixed({2, 3, 5}, p.rng);
    p.gradients("matmul_transposed [2, 3, 4] @ [2, 5, 4]^T * 0.7", {a, b}, {"dA", "dB"},
                [=] { return weighted(matmul_transposed(a, b, real(0.7)), w); });
}

void softmax_backward_probe(Probe& p) {
    for (int c = 0; c < 4; ++c) {
        const Shape s = random_shape(p.rng, 1, 3, 6);
        const int64_t axis = between(p.rng, 0, static_cast<int64_t>(s.size()) - 1);
        const Tensor x = leaf(s, p.rng, -3, 3), w = fixed(s, p.rng);
        p.gradients("softmax " + shape_str(s) + " along axis " + std::to_string(axis), {x}, {"dx"},
                    [=] { return weighted(softmax(x, axis), w); });
    }
    const Tensor big = leaf({3, 5}, p.rng, 997, 1003), w = fixed({3, 5}, p.rng);  // exp(1000) overflows
    p.gradients("softmax of logits near 1000", {big}, {"dx"}, [=] { return weighted(softmax(big, -1), w); });
    const Tensor rows = leaf({20, 9}, p.rng, -2, 2), w2 = fixed({20, 9}, p.rng);
    p.gradients("softmax of 20 rows (threads)", {rows}, {"dx"}, [=] { return weighted(softmax(rows, 1), w2); });
}

void layernorm_backward_probe(Probe& p) {
    const std::vector<std::pair<Shape, int>> cases = {
        {{4, 8}, 3}, {{2, 3, 5}, 1}, {{3, 1}, 3}, {{6, 16}, 0}, {{2, 7}, 2}};
    for (const auto& [s, affine] : cases) {
        const int64_t D = s.back();
        const Tensor x = leaf(s, p.rng, -2, 3);
        const Tensor weight = affine & 1 ? leaf({D}, p.rng, 0.5, 1.5) : Tensor();
        const Tensor bias = affine & 2 ? leaf({D}, p.rng) : Tensor();
        const Tensor w = fixed(s, p.rng);
        std::vector<Tensor> leaves = {x};
        std::vector<std::string> names = {"dx"};
        if (weight.defined()) leaves.push_back(weight), names.push_back("dweight");
        if (bias.defined()) leaves.push_back(bias), names.push_back("dbias");
        p.gradients("layer_norm " + shape_str(s) + (weight.defined() ? " with weight" : "") +
                        (bias.defined() ? " with bias" : ""),
                    leaves, names, [=] { return weighted(layer_norm(x, weight, bias, real(1e-5)), w); });
    }
}

void gelu_backward_probe(Probe& p) {
    Tensor x = leaf({3, 17}, p.rng, -4, 4);
    x.data()[0] = -9;
    x.data()[1] = 9;
    x.data()[2] = 0;
    const Tensor w = fixed({3, 17}, p.rng);
    p.gradients("gelu (exact) [3, 17]", {x}, {"dx"}, [=] { return weighted(gelu(x), w); });
    const Tensor y = leaf({40}, p.rng, -2, 2), w2 = fixed({40}, p.rng);
    p.gradients("gelu (exact), used twice", {y}, {"dx"}, [=] { return weighted(gelu(y) * gelu(y), w2); });
}

void cross_entropy_backward_probe(Probe& p) {
    const double smoothing[] = {0, 0.1, 0.35};
    for (int c = 0; c < 4; ++c) {
        const int64_t B = between(p.rng, 1, 5), K = between(p.rng, 2, 7);
        const Tensor logits = c == 3 ? leaf({B, K}, p.rng, 797, 803) : leaf({B, K}, p.rng, -3, 3);
        std::vector<int64_t> labels(static_cast<size_t>(B));
        for (int64_t& l : labels) l = between(p.rng, 0, K - 1);
        const real e = static_cast<real>(smoothing[c % 3]);
        const real scale = static_cast<real>(p.rng.uniform(0.5, 2));
        p.gradients("cross_entropy [" + std::to_string(B) + ", " + std::to_string(K) + "], label smoothing " +
                        std::to_string(e).substr(0, 4) + (c == 3 ? ", logits near 800" : ""),
                    {logits}, {"dlogits"}, [=] { return cross_entropy(logits, labels, e) * scale; });
    }
}

void sum_axis_forward_probe(Probe& p) {
    for (int c = 0; c < 8; ++c) {
        const Shape s = random_shape(p.rng, 1, 4, 5);
        const int64_t axis = between(p.rng, -static_cast<int64_t>(s.size()), static_cast<int64_t>(s.size()) - 1);
        const bool keepdim = p.rng.below(2) == 1, use_mean = c % 2 == 1;
        const Tensor x = fixed(s, p.rng);
        const Tensor y = use_mean ? mean(x, axis, keepdim) : sum(x, axis, keepdim);
        const std::string what = std::string(use_mean ? "mean" : "sum") + " of " + shape_str(s) + " along axis " +
                                 std::to_string(axis) + (keepdim ? ", keepdim" : "");
        p.shape(what + ": shape", y.shape());
        p.values(what, y, 1e-12);
    }
}

void sum_axis_backward_probe(Probe& p) {
    for (int c = 0; c < 8; ++c) {
        const Shape s = random_shape(p.rng, 1, 4, 5);
        const int64_t axis = between(p.rng, 0, static_cast<int64_t>(s.size()) - 1);
        const bool keepdim = p.rng.below(2) == 1, use_mean = c % 2 == 1;
        const Tensor x = leaf(s, p.rng);
        const Tensor w = fixed((use_mean ? mean(x, axis, keepdim) : sum(x, axis, keepdim)).shape(), p.rng);
        p.gradients(std::string(use_mean ? "mean" : "sum") + " of " + shape_str(s) + " along axis " +
                        std::to_string(axis) + (keepdim ? ", keepdim" : ""),
                    {x}, {"dx"},
                    [=] { return weighted(use_mean ? mean(x, axis, keepdim) : sum(x, axis, keepdim), w); });
    }
}

void dropout_backward_probe(Probe& p) {
    const double ps[] = {0.3, 0.5, 0.9, 1.0};
    for (double prob : ps) {
        const Tensor x = leaf({3, 11}, p.rng), w = fixed({3, 11}, p.rng);
        const uint64_t seed = p.rng.next_u64();
        const std::string what = "dropout p = " + std::to_string(prob).substr(0, 3) + " [3, 11]";
        Rng draw(seed);
        p.values(what + ": output", dropout(x, static_cast<real>(prob), true, draw), 1e-12);
        p.exact(what + ": random numbers left in the generator", {double(draw.next_u64() % 1000003)});
        p.gradients(what, {x}, {"dx"}, [=] {
            Rng again(seed);
            return weighted(dropout(x, static_cast<real>(prob), true, again), w);
        });
    }
}

// ---- chapter 5 ----------------------------------------------------------------------------

struct UnfoldCase {
    Shape shape;
    int64_t kh, kw, sh, sw;
};

std::vector<UnfoldCase> unfold_cases(Rng& rng) {
    std::vector<UnfoldCase> cases = {{{1, 1, 4, 4}, 2, 2, 2, 2}, {{2, 3, 7, 5}, 3, 2, 2, 1}};
    for (int c = 0; c < 4; ++c) {
        const int64_t H = between(rng, 2, 8), W = between(rng, 2, 8);
        cases.push_back({{between(rng, 1, 2), between(rng, 1, 3), H, W},
                         between(rng, 1, H),
                         between(rng, 1, W),
                         between(rng, 1, 3),
                         between(rng, 1, 3)});
    }
    return cases;
}

std::string unfold_label(const UnfoldCase& c) {
    return "unfold " + shape_str(c.shape) + " kernel " + std::to_string(c.kh) + "x" + std::to_string(c.kw) +
           " stride " + std::to_string(c.sh) + "x" + std::to_string(c.sw);
}

void unfold_forward_probe(Probe& p) {
    for (const UnfoldCase& c : unfold_cases(p.rng)) {
        const Tensor x = fixed(c.shape, p.rng);
        const Tensor y = unfold(x, c.kh, c.kw, c.sh, c.sw);
        p.shape(unfold_label(c) + ": shape", y.shape());
        p.values(unfold_label(c), y, 0);
    }
}

void unfold_backward_probe(Probe& p) {
    for (const UnfoldCase& c : unfold_cases(p.rng)) {
        const Tensor x = leaf(c.shape, p.rng);
        const Tensor w = fixed(unfold(x, c.kh, c.kw, c.sh, c.sw).shape(), p.rng);
        p.gradients(unfold_label(c), {x}, {"dx"}, [=] { return weighted(unfold(x, c.kh, c.kw, c.sh, c.sw), w); });
    }
}

// ---- chapters 6 to 9: layers --------------------------------------------------------------

std::vector<Tensor> leaves_of(const Module& m, std::vector<std::string>& names, const std::string& prefix = "d") {
    std::vector<Tensor> out;
    for (const auto& [name, t] : m.named_parameters()) {
        out.push_back(t);
        names.push_back(prefix + name);
    }
    return out;
}

void sinusoidal_encoding_probe(Probe& p) {
    for (const auto& [n, dim] : std::vector<std::pair<int64_t, int64_t>>{{5, 8}, {17, 7}, {3, 1}, {65, 32}}) {
        const Tensor table = sinusoidal_positional_encoding(n, dim);
        p.shape("sinusoidal table for " + std::to_string(n) + " positions, " + std::to_string(dim) + " dims: shape",
                table.shape());
        p.values("sinusoidal table for " + std::to_string(n) + " positions, " + std::to_string(dim) + " dims", table,
                 1e-12);
    }
}

void module_parameters_probe(Probe& p) {
    Rng init(p.rng.next_u64());
    auto dropout_rng = std::make_shared<Rng>(1);
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> modules;
    auto seq = std::make_shared<Sequential>();
    seq->add(std::make_shared<Linear>(4, 6, init))
        .add(std::make_shared<GELU>())
        .add(std::make_shared<Linear>(6, 2, init, false));
    modules.push_back({"Sequential(Linear, GELU, Linear)", seq});
    modules.push_back({"MultiHeadSelfAttention with LSA",
                       std::make_shared<MultiHeadSelfAttention>(8, 2, init, dropout_rng, false, 0, 0, true)});
    BlockConfig config;
    config.dim = 8;
    config.heads = 2;
    config.mlp_hidden_dim = 12;
    modules.push_back({"ViTBlock", std::make_shared<ViTBlock>(config, init, dropout_rng)});
    for (const auto& [what, m] : modules) {
        const auto named = m->named_parameters();
        p.exact(what + ": parameters, numbers of them", {double(named.size()), double(m->num_parameters())});
        for (const auto& [name, t] : named) {
            p.text(what + ": a parameter's name", name);
            p.shape(what + ": " + name + " shape", t.shape());
        }
        std::string names;
        for (const auto& [name, t] : state_dict(*m).tensors) names += name + ";";
        p.text(what + ": state_dict names", names);
        for (const Tensor& t : m->parameters()) sum(t).backward();
        m->zero_grad();
        double left = 0;
        for (const Tensor& t : m->parameters()) left += t.has_grad() ? 1 : 0;
        p.exact(what + ": gradients left after zero_grad", {left});
    }
}

std::vector<bool> random_mask(Rng& rng, int64_t n) {
    std::vector<bool> mask(static_cast<size_t>(n));
    for (size_t i = 0; i < mask.size(); ++i) mask[i] = rng.below(3) != 0;
    mask[0] = true;
    return mask;
}

void attention_forward_probe(Probe& p) {
    struct Setting {
        const char* what;
        bool fused, lsa, masked;
        real attn_dropout;
    };
    const Setting settings[] = {{"step by step", false, false, false, 0},
                                {"fused, attention dropout 0.3 in training", true, false, false, real(0.3)},
                                {"with a patch mask", false, false, true, 0},
                                {"LSA with a patch mask", false, true, true, 0},
                                {"LSA, attention dropout 0.2", true, true, false, real(0.2)}};
    for (const Setting& s : settings) {
        Rng init(p.rng.next_u64());
        const uint64_t dropout_seed = p.rng.next_u64();
        auto dropout_rng = std::make_shared<Rng>(dropout_seed);
        auto attn = std::make_shared<MultiHeadSelfAttention>(8, 2, init, dropout_rng, true, s.attn_dropout, 0, s.lsa);
        attn->fused = s.fused;
        const Tensor x = leaf({2, 5, 8}, p.rng);
        const std::vector<bool> mask = s.masked ? random_mask(p.rng, 4) : std::vector<bool>{};
        const Tensor w = fixed({2, 5, 8}, p.rng);
        attn->record_attention(true);
        {
            *dropout_rng = Rng(dropout_seed);
            p.values(std::string(s.what) + ": output", attn->forward(x, mask));
            p.values(std::string(s.what) + ": the attention weights recorded", attn->attention());
        }
        attn->record_attention(false);
        std::vector<std::string> names = {"dx"};
        std::vector<Tensor> leaves = {x};
        for (const Tensor& t : leaves_of(*attn, names)) leaves.push_back(t);
        p.gradients(s.what, leaves, names, [=] {
            *dropout_rng = Rng(dropout_seed);
            return weighted(attn->forward(x, mask), w);
        });
    }
}

void attention_backward_probe(Probe& p) {
    const std::vector<std::pair<Shape, int64_t>> cases = {{{4, 3}, 4}, {{2, 5, 4}, 6}, {{2, 2, 3, 2}, 3}};
    for (const auto& [qs, m] : cases) {
        Shape ks = qs, vs = qs, os = qs;
        ks[ks.size() - 2] = m;
        vs[vs.size() - 2] = m;
        vs.back() = os.back() = qs.back() + 1;
        const Tensor q = leaf(qs, p.rng), k = leaf(ks, p.rng), v = leaf(vs, p.rng), d_out = fixed(os, p.rng, -1, 1);
        const int64_t d = qs.back();
        const auto forward = [=] {
            const real scale = real(1) / std::sqrt(static_cast<real>(d));
            return matmul(softmax(matmul(q, transpose(k, -2, -1)) * scale, -1), v);
        };
        p.gradients_by(
            "attention_backward q " + shape_str(qs) + ", k " + shape_str(ks) + ", v " + shape_str(vs), {q, k, v},
            {"dq", "dk", "dv"}, [=] { return weighted(forward(), d_out); },
            [=] {
                const AttentionGradients g = attention_backward(q, k, v, d_out);
                return std::vector<Tensor>{g.dq, g.dk, g.dv};
            });
    }
}

void vit_block_forward_probe(Probe& p) {
    for (int c = 0; c < 3; ++c) {
        BlockConfig config;
        config.dim = 8;
        config.heads = 2;
        config.mlp_hidden_dim = 12;
        config.drop_path = c == 1 ? real(0.5) : 0;
        config.dropout = c == 2 ? real(0.2) : 0;
        config.lsa = c == 2;
        Rng init(p.rng.next_u64());
        const uint64_t dropout_seed = p.rng.next_u64();
        auto dropout_rng = std::make_shared<Rng>(dropout_seed);
        auto block = std::make_shared<ViTBlock>(config, init, dropout_rng);
        block->fused = false;  // the exercise's steps, not the reference's fused path
        const Tensor z = leaf({3, 5, 8}, p.rng), w = fixed({3, 5, 8}, p.rng);
        const std::vector<bool> mask = c == 2 ? random_mask(p.rng, 4) : std::vector<bool>{};
        const std::string what = c == 0   ? "ViTBlock"
                                 : c == 1 ? "ViTBlock, drop path 0.5"
                                          : "ViTBlock, LSA, dropout, mask";
        *dropout_rng = Rng(dropout_seed);
        p.values(what + ": output", block->forward(z, mask));
        std::vector<std::string> names = {"dz"};
        std::vector<Tensor> leaves = {z};
        for (const Tensor& t : leaves_of(*block, names)) leaves.push_back(t);
        p.gradients(what, leaves, names, [=] {
            *dropout_rng = Rng(dropout_seed);
            return weighted(block->forward(z, mask), w);
        });
    }
}

ViTConfig tiny_config(Pool pool, Head head) {
    ViTConfig c;
    c.image_height = 8;
    c.image_width = 12;
    c.channels = 2;
    c.patch_size = 4;
    c.dim = 8;
    c.depth = 1;
    c.heads = 2;
    c.mlp_dim = 12;
    c.num_classes = 3;
    c.pool = pool;
    c.head = head;
    return c;
}

void vit_pooling_probe(Probe& p) {
    const std::pair<Pool, Head> settings[] = {
        {Pool::Cls, Head::Linear}, {Pool::Mean, Head::Mlp}, {Pool::Seq, Head::Linear}};
    for (const auto& [pool, head] : settings) {
        const ViTConfig config = tiny_config(pool, head);
        auto model = std::make_shared<VisionTransformer>(config, p.rng.next_u64());
        const Tensor images = fixed({2, 2, 8, 12}, p.rng), w = fixed({2, 3}, p.rng);
        const std::vector<bool> mask = random_mask(p.rng, config.num_patches());
        const std::string what = std::string(EnumNames<Pool>::table[static_cast<int>(pool)].second) + " pooling, " +
                                 EnumNames<Head>::table[static_cast<int>(head)].second + " head";
        model->eval();
        p.values(what + ": logits", model->forward(images));
        p.values(what + ": logits with a patch mask", model->forward(images, mask));
        std::vector<std::string> names;
        const std::vector<Tensor> leaves = leaves_of(*model, names);
        p.gradients(what, leaves, names, [=] { return weighted(model->forward(images, mask), w); });
    }
}

void summary_block_rows_probe(Probe& p) {
    for (int c = 0; c < 3; ++c) {
        ViTConfig config = tiny_config(Pool::Cls, Head::Linear);
        config.depth = between(p.rng, 1, 3);
        config.dim = 4 * between(p.rng, 1, 4);
        config.heads = c == 2 ? 4 : 2;
        config.mlp_dim = between(p.rng, 3, 20);
        config.qkv_bias = c != 1;
        config.lsa = c == 2;
        const ModelSummary s = summarize(config);
        const std::string what = "summary, depth " + std::to_string(config.depth) + (config.lsa ? ", LSA" : "") +
                                 (config.qkv_bias ? "" : ", no qkv bias");
        p.exact(what + ": rows, total parameters", {double(s.rows.size()), double(s.total_parameters())});
        for (const SummaryRow& r : s.rows) {
            p.text(what + ": a row's name and type", r.name + " " + r.type);
            p.shape(what + ": " + r.name + " shape", r.output_shape);
            p.exact(what + ": " + r.name + " parameters", {double(r.parameters)});
        }
    }
}

// ---- chapter 10 ---------------------------------------------------------------------------

void adamw_step_probe(Probe& p) {
    for (int c = 0; c < 3; ++c) {
        Tensor a = leaf({3, 4}, p.rng), b = leaf({5}, p.rng);
        std::unique_ptr<Optimizer> opt;
        const double lr = p.rng.uniform(1e-3, 1e-1), wd = c == 1 ? 0 : p.rng.uniform(0.01, 0.3);
        if (c < 2)
            opt = std::make_unique<AdamW>(std::vector<Tensor>{a, b}, lr, std::make_pair(0.9, 0.99), 1e-8, wd);
        else
            opt = std::make_unique<Adam>(std::vector<Tensor>{a, b}, lr, std::make_pair(0.8, 0.999), 1e-6, wd);
        const std::string what = std::string(c < 2 ? "AdamW" : "Adam") + (wd == 0 ? " without weight decay" : "");
        for (int step = 1; step <= 4; ++step) {
            opt->zero_grad();
            sum(a * fixed({3, 4}, p.rng)).backward();
            sum(b * b * fixed({5}, p.rng)).backward();
            opt->step();
            p.values(what + ": parameter a after step " + std::to_string(step), a, 1e-12);
            p.values(what + ": parameter b after step " + std::to_string(step), b, 1e-12);
        }
    }
}

void cosine_schedule_probe(Probe& p) {
    for (int c = 0; c < 6; ++c) {
        LRSchedule s;
        s.kind = c < 3 ? ScheduleKind::Cosine : c < 5 ? ScheduleKind::Step : ScheduleKind::Constant;
        s.base_lr = p.rng.uniform(1e-4, 1e-2);
        s.total = between(p.rng, 10, 60);
        s.warmup = c == 0 ? 0 : between(p.rng, 0, s.total / 2);
        s.min_lr = c == 2 ? s.base_lr / 10 : 0;
        s.step_size = between(p.rng, 1, 7);
        s.gamma = p.rng.uniform(0.1, 0.9);
        std::vector<double> lrs;
        for (int64_t step = 0; step < s.total + 5; ++step) lrs.push_back(s.lr_at(step));
        p.values(std::string(c < 3   ? "cosine"
                             : c < 5 ? "step"
                                     : "constant") +
                     " schedule, warmup " + std::to_string(s.warmup) + " of " + std::to_string(s.total) +
                     " steps: lr at each step",
                 lrs, 1e-12);
    }
}

// ---- chapter 12 ---------------------------------------------------------------------------

void parallel_chunks_probe(Probe& p) {
    const int threads_before = num_threads();
    set_num_threads(4);
    for (int c = 0; c < 8; ++c) {
        const int64_t n = between(p.rng, 1, 200), grain = between(p.rng, 1, 40);
        std::mutex m;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        parallel_for(n, grain, [&](int64_t b, int64_t e) {
            std::lock_guard<std::mutex> lock(m);
            chunks.push_back({b, e});
        });
        std::sort(chunks.begin(), chunks.end());
        std::vector<double> flat;
        for (const auto& [b, e] : chunks) flat.push_back(double(b)), flat.push_back(double(e));
        p.exact("parallel_for(" + std::to_string(n) + ", grain " + std::to_string(grain) + ") with 4 threads: chunks",
                flat);
    }
    // An exception in one chunk reaches the caller; parallel_for works again afterwards, and a
    // parallel_for inside a chunk runs serially.
    bool thrown = false;
    try {
        parallel_for(100, 1, [](int64_t b, int64_t) {
            if (b == 0) throw std::runtime_error("chunk 0 fails");
        });
    } catch (const std::runtime_error&) {
        thrown = true;
    }
    std::mutex m;
    int64_t covered = 0, inner_calls = 0;
    parallel_for(100, 1, [&](int64_t b, int64_t e) {
        parallel_for(e - b, 1, [&](int64_t, int64_t) {
            std::lock_guard<std::mutex> lock(m);
            ++inner_calls;
        });
        std::lock_guard<std::mutex> lock(m);
        covered += e - b;
    });
    p.exact("an exception reaches the caller; then elements covered, nested calls",
            {thrown ? 1.0 : 0.0, double(covered), double(inner_calls)});
    set_num_threads(threads_before);
}

}  // namespace

const std::vector<ExerciseProbe>& exercise_probes() {
    static const std::vector<ExerciseProbe> all = {
        {"broadcast-shapes", false, broadcast_shapes_probe},
        {"broadcast-backward", true, broadcast_backward_probe},
        {"backward-engine", false, backward_engine_probe},
        {"numerical-gradient", false, numerical_gradient_probe},
        {"softplus-gradcheck", false, softplus_gradcheck_probe},
        {"matmul-backward", true, matmul_backward_probe},
        {"softmax-backward", true, softmax_backward_probe},
        {"layernorm-backward", true, layernorm_backward_probe},
        {"gelu-backward", true, gelu_backward_probe},
        {"cross-entropy-backward", true, cross_entropy_backward_probe},
        {"sum-axis-forward", false, sum_axis_forward_probe},
        {"sum-axis-backward", true, sum_axis_backward_probe},
        {"dropout-backward", true, dropout_backward_probe},
        {"unfold-forward", false, unfold_forward_probe},
        {"unfold-backward", true, unfold_backward_probe},
        {"sinusoidal-encoding", false, sinusoidal_encoding_probe},
        {"module-parameters", false, module_parameters_probe},
        {"attention-forward", false, attention_forward_probe},
        {"attention-backward", true, attention_backward_probe},
        {"vit-block-forward", false, vit_block_forward_probe},
        {"vit-pooling", false, vit_pooling_probe},
        {"summary-block-rows", false, summary_block_rows_probe},
        {"adamw-step", false, adamw_step_probe},
        {"cosine-schedule", false, cosine_schedule_probe},
        {"parallel-chunks", false, parallel_chunks_probe},
    };
    return all;
}

}  // namespace patchgrad::grading
