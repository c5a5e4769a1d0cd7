// Tests for optimizer.cpp: trajectories of SGD, Adam and AdamW against torch.optim
// (tests/data/optimizer_golden.txt, written by autograd/scripts/make_optimizer_golden.py),
// steps by hand, skipped parameters, checkpoint state, clip_grad_norm, split_weight_decay
// and the errors.
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>

#include "autograd/determinism_util.h"
#include "catch.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "test_util.h"

namespace patchgrad {
namespace {

using namespace patchgrad::test;

// ---- the golden file ------------------------------------------------------------------------

struct GoldenParam {
    Shape shape;
    std::vector<real> initial, curvature, target;
    int first_grad = 1;
};

struct GoldenCase {
    std::string name, kind;
    bool defaults = false;
    std::map<std::string, double> hyper;
    std::vector<std::map<std::string, std::vector<real>>> after_step;       // [step - 1][param] -> values
    std::map<std::string, std::map<std::string, std::vector<real>>> state;  // [param][field] -> values
};

struct Golden {
    int steps = 0;
    std::vector<std::string> order;  // parameter names in the file (and group) order
    std::map<std::string, GoldenParam> params;
    std::vector<GoldenCase> cases;
};

// The file's tokens with '#' comment lines removed.
std::istringstream golden_tokens(const std::string& path) {
    std::ifstream in(path);
    INFO("golden file " << path);
    REQUIRE(in);
    std::string line, text;
    while (std::getline(in, line))
        if (line.empty() || line[0] != '#') text += line + "\n";
    return std::istringstream(text);
}

std::vector<real> read_values(std::istream& in, int64_t n) {
    std::vector<real> v(n);
    for (real& e : v) in >> e;
    return v;
}

Golden read_golden() {
    std::istringstream in = golden_tokens(std::string(PATCHGRAD_TEST_DATA) + "/optimizer_golden.txt");
    Golden g;
    std::string word;
    while (in >> word && word != "end") {
        std::string name;
        if (word == "steps") {
            in >> g.steps;
        } else if (word == "param") {
            int64_t ndim;
            in >> name >> ndim;
            GoldenParam& p = g.params[name];
            p.shape.resize(ndim);
            for (int64_t& d : p.shape) in >> d;
            p.initial = read_values(in, shape_numel(p.shape));
            g.order.push_back(name);
        } else if (word == "curvature" || word == "target") {
            in >> name;
            REQUIRE(g.params.count(name));
            GoldenParam& p = g.params[name];
            (word == "curvature" ? p.curvature : p.target) = read_values(in, shape_numel(p.shape));
        } else if (word == "first_grad") {
            in >> name;
            in >> g.params.at(name).first_grad;
        } else if (word == "case") {
            GoldenCase c;
            std::string mode;
            int pairs;
            in >> c.name >> c.kind >> mode >> pairs;
            c.defaults = mode == "defaults";
            for (int i = 0; i < pairs; ++i) {
                std::string key;
                in >> key;
                in >> c.hyper[key];
            }
            for (int s = 1; s <= g.steps; ++s) {
                int step;
                in >> word >> step;
                REQUIRE((word == "step" && step == s));
                c.after_step.emplace_back();
                for (size_t i = 0; i < g.order.size(); ++i) {
                    in >> name;
                    c.after_step.back()[name] = read_values(in, shape_numel(g.params.at(name).shape));
                }
            }
            while (in >> word && word == "state") {
                std::string field;
                in >> name >> field;
                c.state[name][field] = read_values(in, field == "step" ? 1 : shape_numel(g.params.at(name).shape));
            }
            REQUIRE(word == "endcase");
            g.cases.push_back(c);
        } else {
            FAIL("unexpected token '" << word << "' in the golden file");
        }
        REQUIRE(in);
    }
    REQUIRE(word == "end");
    return g;
}

std::unique_ptr<Optimizer> make_optimizer(const GoldenCase& c, std::vector<ParamGroup> groups) {
    auto h = [&c](const char* key) { return c.hyper.at(key); };
    if (c.kind == "SGD")
        return std::make_unique<SGD>(groups, h("lr"), h("momentum"), h("dampening"), h("weight_decay"),
                                     h("nesterov") != 0);
    if (c.kind == "Adam")
        return std::make_unique<Adam>(groups, h("lr"), std::make_pair(h("beta1"), h("beta2")), h("eps"),
                                      h("weight_decay"));
    REQUIRE(c.kind == "AdamW");
    if (c.defaults) {
        auto adamw = std::make_unique<AdamW>(groups);
        // The file records the defaults PyTorch used; patchgrad's must be the same numbers.
        CHECK(adamw->lr() == h("lr"));
        CHECK(adamw->beta1 == h("beta1"));
        CHECK(adamw->beta2 == h("beta2"));
        CHECK(adamw->eps == h("eps"));
        CHECK(*adamw->param_groups()[0].weight_decay == h("weight_decay"));
        return adamw;
    }
    return std::make_unique<AdamW>(groups, h("lr"), std::make_pair(h("beta1"), h("beta2")), h("eps"),
                                   h("weight_decay"));
}

Tensor values_tensor(const Shape& shape, const std::vector<real>& v) { return Tensor::from_vector(shape, v); }

// ---- small problems for the other tests ---------------------------------------------------------

// Sets p.grad = g (allocating it if absent).
void set_grad(Tensor& p, const std::vector<real>& g) {
    REQUIRE(static_cast<int64_t>(g.size()) == p.numel());
    p.zero_grad();
    real* d = p.grad_data();
    for (size_t i = 0; i < g.size(); ++i) d[i] = g[i];
}

// The quadratic of the golden file on fresh random parameters: grad = h * (p - c).
struct Quadratic {
    std::vector<Tensor> params, curvature, target;
    explicit Quadratic(uint64_t seed) {
        Rng rng(seed);
        for (const Shape& s : {Shape{3, 4}, Shape{5}, Shape{2, 1, 3}}) {
            params.push_back(rand_tensor(s, rng));
            curvature.push_back(rand_tensor(s, rng, 0.5, 2.5, false));
            target.push_back(rand_tensor(s, rng, -1, 1, false));
        }
    }
    void set_grads() {
        for (size_t i = 0; i < params.size(); ++i) {
            std::vector<real> g(params[i].numel());
            for (int64_t j = 0; j < params[i].numel(); ++j)
                g[j] = curvature[i].data()[j] * (params[i].data()[j] - target[i].data()[j]);
            set_grad(params[i], g);
        }
    }
    std::vector<Tensor> copies() const {
        std::vector<Tensor> out;
        for (const Tensor& p : params) out.push_back(p.detach().requires_grad_());
        return out;
    }
};

}  // namespace

// ---- golden trajectories ----------------------------------------------------------------------

TEST_CASE("optimizer: SGD, Adam and AdamW trajectories match torch.optim (golden file)",
          "[optimizer][forward][ex:adamw-step]") {
    const Golden g = read_golden();
    REQUIRE(g.steps == 5);
    REQUIRE(g.order == std::vector<std::string>{"w", "late", "b"});
    REQUIRE(g.cases.size() == 8);
    for (const GoldenCase& c : g.cases) {
        INFO("case " << c.name);
        std::map<std::string, Tensor> p;
        for (const std::string& name : g.order)
            p[name] = values_tensor(g.params.at(name).shape, g.params.at(name).initial).requires_grad_();
        // [w, late] with the optimiser's weight decay, [b] with none, as in the script.
        auto optimizer = make_optimizer(c, {{{p["w"], p["late"]}, std::nullopt}, {{p["b"]}, 0.0}});
        for (int s = 1; s <= g.steps; ++s) {
            INFO("after step " << s);
            optimizer->zero_grad();
            for (const std::string& name : g.order) {
                const GoldenParam& gp = g.params.at(name);
                if (s < gp.first_grad) continue;
                std::vector<real> grad(gp.curvature.size());
                for (size_t i = 0; i < grad.size(); ++i) grad[i] = gp.curvature[i] * (p[name].data()[i] - gp.target[i]);
                set_grad(p[name], grad);
            }
            optimizer->step();
            for (const std::string& name : g.order)
                require_close(p[name], values_tensor(g.params.at(name).shape, c.after_step[s - 1].at(name)), 1e-10,
                              name);
        }
        // The state, under PyTorch's numbering: w = 0, late = 1, b = 2 (group order).
        std::map<std::string, Tensor> state;
        for (const auto& [key, t] : optimizer->state_tensors()) state[key] = t;
        const std::vector<std::string> numbered{"w", "late", "b"};
        size_t expected_entries = 0;
        for (size_t i = 0; i < numbered.size(); ++i) {
            const std::string& name = numbered[i];
            const Shape& shape = g.params.at(name).shape;
            const auto fields = c.state.find(name);  // plain SGD keeps no state at all
            if (fields != c.state.end())
                for (const auto& [field, v] : fields->second) {
                    const std::string key = "state." + std::to_string(i) + "." + field;
                    INFO(key);
                    REQUIRE(state.count(key));
                    require_close(state[key], field == "step" ? Tensor::scalar(v[0]) : values_tensor(shape, v), 1e-10,
                                  key);
                    ++expected_entries;
                }
            // PyTorch's SGD keeps no step count; patchgrad's does, for every optimiser.
            if (c.kind == "SGD") {
                REQUIRE(state.count("state." + std::to_string(i) + ".step"));
                ++expected_entries;
            }
        }
        REQUIRE(state.size() == expected_entries);
        REQUIRE(optimizer->state(1).step == g.steps - g.params.at("late").first_grad + 1);
    }
}

// ---- steps by hand ----------------------------------------------------------------------------

TEST_CASE("SGD: momentum and Nesterov steps by hand", "[optimizer]") {
    // Constant gradient 2, lr 0.1, momentum 0.9. Heavy ball: b1 = 2, b2 = 0.9 * 2 + 2 = 3.8,
    // p: 1 -> 1 - 0.2 = 0.8 -> 0.8 - 0.38 = 0.42. Nesterov steps along g + 0.9 b:
    // 2 + 1.8 = 3.8 then 2 + 3.42 = 5.42, p: 1 -> 0.62 -> 0.078.
    for (const auto& [nesterov, p1, p2] : {std::tuple<bool, double, double>{false, 0.8, 0.42}, {true, 0.62, 0.078}}) {
        INFO("nesterov " << nesterov);
        Tensor p = Tensor::ones({1}, true);
        SGD sgd({p}, 0.1, 0.9, 0, 0, nesterov);
        set_grad(p, {2});
        sgd.step();
        REQUIRE(p.item() == Approx(p1).epsilon(1e-14));
        set_grad(p, {2});
        sgd.step();
        REQUIRE(p.item() == Approx(p2).epsilon(1e-14));
        REQUIRE(sgd.state(0).momentum_buffer.item() == Approx(3.8).epsilon(1e-14));
    }
}

TEST_CASE("SGD: coupled weight decay adds wd * p to the gradient", "[optimizer]") {
    // p = 2, g = 1, wd 0.5: the step is along 1 + 0.5 * 2 = 2, so p = 2 - 0.1 * 2 = 1.8.
    Tensor p = Tensor::full({1}, 2, true);
    SGD sgd({p}, 0.1, 0, 0, 0.5);
    set_grad(p, {1});
    sgd.step();
    REQUIRE(p.item() == Approx(1.8).epsilon(1e-14));
    REQUIRE_FALSE(sgd.state(0).momentum_buffer.defined());  // no momentum, no buffer
}

TEST_CASE("Adam: the first step moves every element by lr against the sign of its gradient",
          "[optimizer][ex:adamw-step]") {
    // After one step m = (1 - b1) g and v = (1 - b2) g^2; bias correction divides them by
    // exactly those factors, so the step is lr * g / (|g| + eps), whatever |g| is.
    Tensor p = Tensor::from_vector({4}, {1, -1, 0.5, 3}, true);
    const std::vector<real> grad{1e-3, -20, 3, -0.25};
    Adam adam({p}, 0.01);
    set_grad(p, grad);
    adam.step();
    const std::vector<real> start{1, -1, 0.5, 3};
    for (int i = 0; i < 4; ++i)
        REQUIRE(p.data()[i] == Approx(start[i] - 0.01 * grad[i] / (std::abs(grad[i]) + 1e-8)).epsilon(1e-12));
}

TEST_CASE("AdamW: weight decay is decoupled from the gradient", "[optimizer][ex:adamw-step]") {
    // With a zero gradient m = v = 0 and the Adam step is 0 / (0 + eps) = 0: only the decay
    // p *= 1 - lr * wd acts, 100 -> 100 * 0.95^3. Adam's coupled decay instead feeds wd * p
    // through the moments, which normalise it away: p moves by about lr per step whatever
    // its size, 100 -> 99.7 (PyTorch: 99.70000960507348).
    Tensor p = Tensor::from_vector({2}, {100, -40}, true), q = Tensor::from_vector({2}, {100, -40}, true);
    AdamW adamw({p}, 0.1, {0.9, 0.999}, 1e-8, 0.5);
    Adam adam({q}, 0.1, {0.9, 0.999}, 1e-8, 0.5);
    for (int s = 0; s < 3; ++s) {
        set_grad(p, {0, 0});
        set_grad(q, {0, 0});
        adamw.step();
        adam.step();
    }
    REQUIRE(p.data()[0] == Approx(100 * std::pow(0.95, 3)).epsilon(1e-14));
    REQUIRE(p.data()[1] == Approx(-40 * std::pow(0.95, 3)).epsilon(1e-14));
    REQUIRE(q.data()[0] == Approx(99.70000960507348).epsilon(1e-14));
    REQUIRE(q.data()[1] == Approx(-39.7).epsilon(1e-6));
}

// ---- skipping, groups, learning rate ----------------------------------------------------------

TEST_CASE("optimizer: parameters without a gradient are skipped entirely", "[optimizer]") {
    // With weight decay and momentum a parameter would move even with a zero gradient; without
    // any gradient it must not move, and its step count and buffers must not appear.
    for (const std::string kind : {"SGD", "Adam", "AdamW"}) {
        INFO(kind);
        Tensor used = Tensor::from_vector({2}, {1, 2}, true), unused = Tensor::from_vector({2}, {3, 4}, true);
        std::unique_ptr<Optimizer> opt;
        if (kind == "SGD") opt = std::make_unique<SGD>(std::vector<Tensor>{used, unused}, 0.1, 0.9, 0, 0.1);
        if (kind == "Adam")
            opt = std::make_unique<Adam>(std::vector<Tensor>{used, unused}, 0.1, std::make_pair(0.9, 0.999), 1e-8, 0.1);
        if (kind == "AdamW") opt = std::make_unique<AdamW>(std::vector<Tensor>{used, unused}, 0.1);
        for (int s = 0; s < 2; ++s) {
            set_grad(used, {0.5, -0.5});
            opt->step();
            opt->zero_grad();
            REQUIRE_FALSE(used.has_grad());
        }
        REQUIRE(unused.to_vector() == std::vector<real>{3, 4});
        REQUIRE(opt->state(0).step == 2);
        REQUIRE(opt->state(1).step == 0);
        for (const auto& [name, t] : opt->state_tensors()) REQUIRE(name.rfind("state.0.", 0) == 0);
        REQUIRE(used.to_vector() != std::vector<real>{1, 2});
    }
}

TEST_CASE("optimizer: the same bits for 1, 2, 3, 8 and 16 threads, which take whole parameters",
          "[optimizer][parallel]") {
    // 40 parameters of different sizes, one without a gradient, three steps.
    for (const std::string kind : {"SGD", "AdamW"}) {
        INFO(kind);
        auto run = [&](int threads) {
            ThreadCount guard(threads);
            Rng rng(5);
            std::vector<Tensor> params;
            for (int64_t i = 0; i < 40; ++i) params.push_back(rand_tensor({1 + 37 * (i % 7), 3}, rng));
            std::unique_ptr<Optimizer> opt;
            if (kind == "SGD") opt = std::make_unique<SGD>(params, 0.1, 0.9, 0, 0.01);
            if (kind == "AdamW") opt = std::make_unique<AdamW>(params, 0.01);
            std::vector<real> all;
            for (int s = 0; s < 3; ++s) {
                for (size_t i = 0; i < params.size(); ++i)
                    if (i != 7) set_grad(params[i], rand_tensor(params[i].shape(), rng, -1, 1, false).to_vector());
                opt->step();
                opt->zero_grad();
            }
            for (const Tensor& p : params)
                for (const real x : p.to_vector()) all.push_back(x);
            return all;
        };
        const std::vector<real> one = run(1);
        for (const int threads : {2, 3, 8, 16}) {
            INFO(threads << " threads");
            CHECK(run(threads) == one);
        }
    }
}

TEST_CASE("optimizer: a group without its own weight decay takes the optimizer's", "[optimizer]") {
    Tensor a = Tensor::ones({2, 2}, true), b = Tensor::ones({2}, true), c = Tensor::ones({3}, true);
    AdamW opt({{{a}, std::nullopt}, {{b}, 0.0}, {{c}, 0.3}}, 1e-3, {0.9, 0.999}, 1e-8, 0.05);
    REQUIRE(*opt.param_groups()[0].weight_decay == 0.05);
    REQUIRE(*opt.param_groups()[1].weight_decay == 0);
    REQUIRE(*opt.param_groups()[2].weight_decay == 0.3);
    // Only the decay differs between the groups here: zero gradients leave p * (1 - lr * wd).
    set_grad(a, {0, 0, 0, 0});
    set_grad(b, {0, 0});
    set_grad(c, {0, 0, 0});
    opt.step();
    REQUIRE(a.data()[0] == Approx(1 - 1e-3 * 0.05).epsilon(1e-15));
    REQUIRE(b.data()[0] == 1);
    REQUIRE(c.data()[0] == Approx(1 - 1e-3 * 0.3).epsilon(1e-15));
}

TEST_CASE("optimizer: set_lr changes the next step's size", "[optimizer]") {
    Tensor p = Tensor::zeros({1}, true);
    SGD sgd({p}, 0.1);
    sgd.set_lr(0.25);
    REQUIRE(sgd.lr() == 0.25);
    set_grad(p, {2});
    sgd.step();
    REQUIRE(p.item() == Approx(-0.5).epsilon(1e-15));
    sgd.set_lr(0);  // allowed: a schedule may end at 0
    set_grad(p, {2});
    sgd.step();
    REQUIRE(p.item() == Approx(-0.5).epsilon(1e-15));
}

// ---- checkpoint state ---------------------------------------------------------------------------

TEST_CASE("optimizer: state_tensors and load_state_tensors resume a run exactly", "[optimizer]") {
    // Run A: 5 steps. Run B: 3 steps, then its parameters and optimiser state are copied into
    // a fresh optimiser (as a checkpoint would) that does the last 2. Bit-identical results.
    for (const std::string kind : {"SGD", "AdamW"}) {
        INFO(kind);
        auto make = [&kind](const std::vector<Tensor>& params) -> std::unique_ptr<Optimizer> {
            if (kind == "SGD") return std::make_unique<SGD>(params, 0.05, 0.9, 0, 0.01, true);
            return std::make_unique<AdamW>(params, 0.05);
        };
        Quadratic a(3), b(3);
        auto opt_a = make(a.params), opt_b = make(b.params);
        for (int s = 0; s < 5; ++s) {
            a.set_grads();
            opt_a->step();
        }
        for (int s = 0; s < 3; ++s) {
            b.set_grads();
            opt_b->step();
        }
        Quadratic resumed(3);
        resumed.params = b.copies();
        auto opt_resumed = make(resumed.params);
        opt_resumed->load_state_tensors(opt_b->state_tensors());
        for (int s = 0; s < 2; ++s) {
            resumed.set_grads();
            opt_resumed->step();
        }
        for (size_t i = 0; i < a.params.size(); ++i) REQUIRE(resumed.params[i].to_vector() == a.params[i].to_vector());
        REQUIRE(opt_resumed->state(0).step == 5);
    }
}

TEST_CASE("optimizer: load_state_tensors rejects state that does not fit", "[optimizer][errors]") {
    Tensor w = Tensor::ones({2, 3}, true), b = Tensor::ones({3}, true);
    AdamW adamw(std::vector<Tensor>{w, b});
    set_grad(w, {1, 2, 3, 4, 5, 6});
    set_grad(b, {1, 2, 3});
    adamw.step();
    const auto good = adamw.state_tensors();
    REQUIRE(good.size() == 6);

    auto with = [&good](const std::string& name, Tensor t) {
        auto s = good;
        for (auto& [n, v] : s)
            if (n == name) v = t;
        return s;
    };
    require_error(
        [&] {
            adamw.load_state_tensors(with("state.0.exp_avg", Tensor::zeros({3, 2})));
        },
        {"AdamW", "state.0.exp_avg", "[3, 2]", "[2, 3]"});
    require_error([&] { adamw.load_state_tensors(with("state.1.step", Tensor::scalar(1.5))); },
                  {"AdamW", "state.1.step", "positive integer"});
    auto extra = good;
    extra.emplace_back("state.2.step", Tensor::scalar(1));
    require_error([&] { adamw.load_state_tensors(extra); }, {"AdamW", "state.2.step", "only 2 parameters"});
    auto wrong_field = good;
    wrong_field.emplace_back("state.0.momentum_buffer", Tensor::zeros({2, 3}));
    require_error([&] { adamw.load_state_tensors(wrong_field); },
                  {"AdamW", "state.0.momentum_buffer", "exp_avg, exp_avg_sq"});
    auto missing = good;
    missing.erase(missing.begin() + 2);  // state.0.exp_avg_sq
    require_error([&] { adamw.load_state_tensors(missing); }, {"AdamW", "state.0.exp_avg_sq", "missing"});
    require_error([&] { adamw.load_state_tensors(with("state.1.exp_avg", Tensor())); },
                  {"AdamW", "state.1.exp_avg", "undefined"});
    require_error(
        [&] {
            adamw.load_state_tensors({{"exp_avg", Tensor::zeros({3})}});
        },
        {"AdamW", "'exp_avg'", "state.<index>.<field>"});
    // Adam state into an SGD with momentum: the buffers are not the ones SGD keeps.
    SGD sgd(std::vector<Tensor>{w, b}, 0.1, 0.9);
    require_error([&] { sgd.load_state_tensors(good); }, {"SGD", "exp_avg", "momentum_buffer"});
    // A failed load leaves the state as it was.
    REQUIRE(adamw.state(0).step == 1);
    REQUIRE(adamw.state(0).exp_avg.defined());
}

// ---- clip_grad_norm ---------------------------------------------------------------------------

TEST_CASE("clip_grad_norm: the norm of all gradients together, scaled down to max_norm", "[optimizer]") {
    // Gradients (3) and (4, 0): total norm 5.
    Tensor a = Tensor::zeros({1}, true), b = Tensor::zeros({2}, true), none = Tensor::zeros({2}, true);
    set_grad(a, {3});
    set_grad(b, {4, 0});
    SECTION("above max_norm: scaled by max_norm / (norm + 1e-6)") {
        REQUIRE(clip_grad_norm({a, b, none}, 1.0) == Approx(5).epsilon(1e-15));
        const double coef = 1.0 / (5 + 1e-6);
        REQUIRE(a.grad().item() == Approx(3 * coef).epsilon(1e-15));
        REQUIRE(b.grad().to_vector()[0] == Approx(4 * coef).epsilon(1e-15));
        REQUIRE_FALSE(none.has_grad());  // no gradient: ignored, and none created
        // The norm after clipping is max_norm (up to the 1e-6 guard).
        REQUIRE(clip_grad_norm({a, b}, 100.0) == Approx(1).epsilon(1e-6));
    }
    SECTION("below max_norm: unchanged") {
        REQUIRE(clip_grad_norm({a, b}, 5.5) == Approx(5).epsilon(1e-15));
        REQUIRE(a.grad().item() == 3);
        REQUIRE(b.grad().to_vector() == std::vector<real>{4, 0});
    }
    SECTION("no gradients at all: 0") { REQUIRE(clip_grad_norm({none}, 1.0) == 0); }
    SECTION("a non-finite norm is returned and the gradients are left alone") {
        set_grad(b, {std::numeric_limits<real>::infinity(), 0});
        REQUIRE(std::isinf(clip_grad_norm({a, b}, 1.0)));
        REQUIRE(a.grad().item() == 3);
    }
}

TEST_CASE("clip_grad_norm: max_norm must be positive", "[optimizer][errors]") {
    Tensor a = Tensor::zeros({1}, true);
    require_error([&] { clip_grad_norm({a}, 0); }, {"clip_grad_norm", "max_norm", "0"});
    require_error([&] { clip_grad_norm({a}, -2.5); }, {"clip_grad_norm", "max_norm", "-2.5"});
}

// ---- split_weight_decay -----------------------------------------------------------------------

TEST_CASE("split_weight_decay: matrices decay, biases, LayerNorm, cls_token, pos_embed do not",
          "[optimizer][documents]") {
    auto p = [](const Shape& s) { return Tensor::zeros(s, true); };
    const std::vector<std::pair<std::string, Tensor>> named{
        {"cls_token", p({1, 1, 8})},
        {"pos_embed", p({1, 5, 8})},
        {"patch_embed.proj.weight", p({8, 48})},
        {"patch_embed.proj.bias", p({8})},
        {"blocks.0.norm1.weight", p({8})},
        {"blocks.0.attn.qkv.weight", p({24, 8})},
        {"blocks.0.attn.qkv.bias", p({24})},
        {"blocks.0.mlp.fc1.weight", p({16, 8})},
        {"blocks.0.pos_embed", p({1, 5, 8})},  // only the top-level names are exempt, like timm
        {"head.weight", p({10, 8})},
        {"head.bias", p({10})},
        {"frozen.weight", Tensor::zeros({4, 4})},  // does not require grad: left out
    };
    const std::vector<ParamGroup> groups = split_weight_decay(named);
    REQUIRE(groups.size() == 2);
    auto names_of = [&named](const ParamGroup& g) {
        std::vector<std::string> names;
        for (const Tensor& t : g.params)
            for (const auto& [n, q] : named)
                if (q.same(t)) names.push_back(n);
        return names;
    };
    REQUIRE(names_of(groups[0]) == std::vector<std::string>{"patch_embed.proj.weight", "blocks.0.attn.qkv.weight",
                                                            "blocks.0.mlp.fc1.weight", "blocks.0.pos_embed",
                                                            "head.weight"});
    REQUIRE_FALSE(groups[0].weight_decay.has_value());
    REQUIRE(names_of(groups[1]) == std::vector<std::string>{"cls_token", "pos_embed", "patch_embed.proj.bias",
                                                            "blocks.0.norm1.weight", "blocks.0.attn.qkv.bias",
                                                            "head.bias"});
    REQUIRE(groups[1].weight_decay == 0.0);
    // Straight into an optimiser: the first group takes its weight decay.
    AdamW adamw(groups, 1e-3, {0.9, 0.999}, 1e-8, 0.05);
    REQUIRE(*adamw.param_groups()[0].weight_decay == 0.05);
    REQUIRE(*adamw.param_groups()[1].weight_decay == 0);
}

// ---- bad hyper-parameters and parameters ------------------------------------------------------

TEST_CASE("optimizer: bad hyper-parameters name the optimizer and the value", "[optimizer][errors]") {
    const std::vector<Tensor> ps{Tensor::ones({2}, true)};
    const real nan = std::numeric_limits<real>::quiet_NaN();
    require_error([&] { SGD(ps, 0); }, {"SGD", "learning rate", "0", "positive"});
    require_error([&] { SGD(ps, -0.1); }, {"SGD", "learning rate", "-0.1"});
    require_error([&] { Adam(ps, nan); }, {"Adam", "learning rate", "nan"});
    require_error([&] { AdamW(ps, -1e-3); }, {"AdamW", "learning rate", "-0.001"});
    require_error([&] { Adam(ps, 1e-3, {1.0, 0.999}); }, {"Adam", "beta1", "1", "[0, 1)"});
    require_error([&] { AdamW(ps, 1e-3, {0.9, -0.5}); }, {"AdamW", "beta2", "-0.5", "[0, 1)"});
    require_error([&] { AdamW(ps, 1e-3, {0.9, 1.5}); }, {"AdamW", "beta2", "1.5"});
    require_error([&] { Adam(ps, 1e-3, {0.9, 0.999}, -1e-8); }, {"Adam", "eps", "-1e-08"});
    require_error([&] { AdamW(ps, 1e-3, {0.9, 0.999}, 1e-8, -0.01); }, {"AdamW", "weight_decay", "-0.01"});
    require_error([&] { SGD(ps, 0.1, -0.9); }, {"SGD", "momentum", "-0.9"});
    require_error([&] { SGD(ps, 0.1, 0.9, 1.5); }, {"SGD", "dampening", "1.5"});
    require_error([&] { SGD(ps, 0.1, 0, 0, -1); }, {"SGD", "weight_decay", "-1"});
    require_error([&] { SGD(ps, 0.1, 0, 0, 0, true); }, {"SGD", "Nesterov", "momentum 0"});
    require_error([&] { SGD(ps, 0.1, 0.9, 0.1, 0, true); }, {"SGD", "Nesterov", "dampening 0.1"});
    require_error([&] { AdamW({{ps, std::nullopt}, {ps, -0.5}}, 1e-3); }, {"AdamW", "weight_decay", "-0.5", "group 1"});
    AdamW adamw(ps);
    require_error([&] { adamw.set_lr(-0.5); }, {"AdamW", "learning rate", "-0.5"});
    require_error([&] { adamw.set_lr(std::numeric_limits<double>::infinity()); }, {"AdamW", "learning rate", "inf"});
}

TEST_CASE("optimizer: bad parameter lists", "[optimizer][errors]") {
    Tensor p = Tensor::ones({2, 3}, true);
    require_error([&] { SGD(std::vector<Tensor>{}, 0.1); }, {"SGD", "empty parameter list"});
    require_error([&] { Adam(std::vector<ParamGroup>{{{}, std::nullopt}}); }, {"Adam", "empty parameter list"});
    require_error([&] { AdamW({Tensor()}); }, {"AdamW", "parameter 0 of group 0", "undefined"});
    require_error([&] { AdamW({p, p * 2.0}); }, {"AdamW", "parameter 1 of group 0", "[2, 3]", "not a leaf", "mul"});
    require_error(
        [&] {
            AdamW({{{p}, std::nullopt}, {{p}, 0.0}});
        },
        {"AdamW", "parameter 0 of group 1", "[2, 3]", "more than once"});
}

}  // namespace patchgrad
