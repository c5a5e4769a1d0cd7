// tutorial_08_block — the program of chapter 8, the Transformer encoder block.
//
// It builds one ViTBlock (pre-norm: z' = MSA(LN(z)) + z, z = MLP(LN(z')) + z', the paper's
// eqs. 2-3) and takes it apart step by step: its parameters, each step's shape, the MLP on
// its own (it acts on every token alone, unlike attention), the gradient through a deep
// stack with and without the residual connections (grad_norms.png in --out), dropout and
// drop path, and ViT from scratch's block that feeds LN(x) to the MLP. Everything is float64
// and seeded, so the printed numbers are the same on every machine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/drop_path.h"
#include "patchgrad/layers/feed_forward.h"
#include "patchgrad/layers/state_dict.h"
#include "patchgrad/vit/pictures/canvas.h"
#include "patchgrad/vit/pictures/chart.h"
#include "patchgrad/vit/vit_block.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

namespace {

double l2_norm(const Tensor& t) {
    double s = 0;
    for (real v : t.to_vector()) s += double(v) * double(v);
    return std::sqrt(s);
}

using tutorial::fixed;
using tutorial::max_abs_difference;

std::string sci(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3e", v);
    return buf;
}

// The first `n` features of token `t` of sample 0 of x [B, T, D].
std::string first_features(const Tensor& x, int64_t t, int64_t n) {
    std::string s;
    for (int64_t d = 0; d < n; ++d) s += (d ? " " : "") + fixed(x.at({0, t, d}), 4);
    return s;
}

// A block of width D with `heads` heads, MLP ratio 4 and no dropout.
BlockConfig block_config(int64_t D, int64_t heads) {
    BlockConfig config;
    config.dim = D;
    config.heads = heads;
    config.mlp_hidden_dim = mlp_hidden_dim(D, 0, 4);
    return config;
}

// ---- 2. one block and its parameters -------------------------------------------------
void parameters_of_a_block() {
    tutorial::heading("2. one ViTBlock: D = 8, 2 heads, MLP ratio 4");
    // [snippet:build-block]
    Rng rng(8);
    const int64_t D = 8;
    BlockConfig config;  // the other fields keep their defaults: qkv bias, no dropout, LN eps 1e-6
    config.dim = D;
    config.heads = 2;
    config.mlp_hidden_dim = mlp_hidden_dim(D, /*mlp_dim=*/0, /*mlp_ratio=*/4);  // 4 * 8 = 32
    ViTBlock block(config, rng, /*dropout_rng=*/nullptr);
    for (const auto& [name, p] : block.named_parameters())
        std::cout << name << " " << shape_str(p.shape()) << " " << p.numel() << "\n";
    std::cout << "total " << block.num_parameters() << " = 12 D^2 + 13 D = " << 12 * D * D + 13 * D << "\n";
    // [/snippet:build-block]
}

// ---- 3. the block on a batch ----------------------------------------------------------
void block_on_a_batch() {
    tutorial::heading("3. the block on B = 2 images of N + 1 = 5 tokens");
    Rng rng(8);
    const int64_t D = 8;
    ViTBlock block(block_config(D, 2), rng, nullptr);
    Tensor z = Tensor::uniform({2, 5, D}, -1, 1, rng);  // z_{l-1} [B, N+1, D]
    const Tensor z_out = block.forward(z);              // z_l [B, N+1, D]
    std::cout << "z " << shape_str(z.shape()) << " -> z_l " << shape_str(z_out.shape()) << "\n";

    // LN normalises each token over its D features (weight 1, bias 0 at initialisation).
    const Tensor ln1 = block.norm1->forward(z);
    double mean = 0, var = 0;
    for (int64_t d = 0; d < D; ++d) mean += ln1.at({0, 3, d}) / D;
    for (int64_t d = 0; d < D; ++d) var += (ln1.at({0, 3, d}) - mean) * (ln1.at({0, 3, d}) - mean) / D;
    std::cout << "token 3 of image 0 after LN: mean " << fixed(std::abs(mean), 6) << ", variance " << fixed(var, 6)
              << "\n";
    // A fresh block is close to the identity: both branches start small (weights std 0.02).
    // Zeroing a branch's last Linear turns that branch off, so z_l - z is the other one alone.
    const auto without = [&](Linear& last) {
        const Tensor w = last.weight.detach(), b = last.bias.detach();  // copies
        for (Tensor p : {last.weight, last.bias}) std::fill(p.data(), p.data() + p.numel(), real(0));
        const real size = l2_norm(block.forward(z) - z);
        std::copy(w.data(), w.data() + w.numel(), last.weight.data());
        std::copy(b.data(), b.data() + b.numel(), last.bias.data());
        return size;
    };
    std::cout << "at initialisation: |z| = " << fixed(l2_norm(z), 4) << ", |z_l - z| = " << fixed(l2_norm(z_out - z), 4)
              << ", attention branch alone " << fixed(without(*block.mlp->fc2), 4) << ", MLP branch alone "
              << fixed(without(*block.attn->proj), 4) << "\n";
}

// ---- 4. the MLP -------------------------------------------------------------------------
void the_mlp() {
    tutorial::heading("4. the MLP: Linear -> GELU -> Linear, applied to every token alone");
    std::cout << "mlp_hidden_dim(768, 0, 4) = " << mlp_hidden_dim(768, 0, 4) << "   (ViT-B: D = 768, ratio 4)\n";
    std::cout << "mlp_hidden_dim(768, 3072, 4) = " << mlp_hidden_dim(768, 3072, 4)
              << "   (mlp_dim given: used as is)\n";
    Rng rng(3);
    const int64_t D = 8;
    ViTBlock block(block_config(D, 2), rng, nullptr);
    scramble_parameters(block, rng);
    FeedForward& mlp = *block.mlp;
    Tensor x = Tensor::uniform({1, 5, D}, -1, 1, rng);
    Tensor h = mlp.fc1->forward(x);
    Tensor a = mlp.act->forward(h);
    std::cout << "x " << shape_str(x.shape()) << " -> fc1 " << shape_str(h.shape()) << " -> GELU "
              << shape_str(a.shape()) << " -> fc2 " << shape_str(mlp.fc2->forward(a).shape()) << "\n";
    std::cout << "fc1.weight " << shape_str(mlp.fc1->weight.shape()) << ", fc2.weight "
              << shape_str(mlp.fc2->weight.shape()) << ", parameters 2 D F + F + D = " << mlp.num_parameters() << "\n";

    // Change token 3 of the input and see which output tokens move.
    // [snippet:token-mixing]
    Tensor changed = x.detach();
    for (int64_t d = 0; d < D; ++d) changed.at({0, 3, d}) += 1;
    auto moved_tokens = [&](const Tensor& before, const Tensor& after) {
        std::string tokens;
        for (int64_t t = 0; t < 5; ++t) {
            double diff = 0;
            for (int64_t d = 0; d < D; ++d) diff = std::max(diff, std::abs(after.at({0, t, d}) - before.at({0, t, d})));
            if (diff > 1e-12) tokens += " " + std::to_string(t);
        }
        return tokens;
    };
    std::cout << "tokens changed by the MLP:      " << moved_tokens(mlp.forward(x), mlp.forward(changed)) << "\n";
    std::cout << "tokens changed by the attention:"
              << moved_tokens(block.attn->forward(x), block.attn->forward(changed)) << "\n";
    // [/snippet:token-mixing]
}

// ---- 5. residual connections and the gradient -----------------------------------------
struct GradientNorms {
    std::vector<double> with_residuals, without_residuals;
};

// L blocks at timm's initialisation; the loss is <z_L, r> for a fixed random r, so dL/dz_L = r
// in both cases. Returns |dL/dz_l| for l = 0..L.
GradientNorms gradient_through_depth(int64_t L) {
    const int64_t D = 16, heads = 4;
    Rng rng(4);
    std::vector<std::shared_ptr<ViTBlock>> blocks;
    for (int64_t l = 0; l < L; ++l) blocks.push_back(std::make_shared<ViTBlock>(block_config(D, heads), rng, nullptr));
    const Tensor input = Tensor::uniform({2, 5, D}, -1, 1, rng);
    const Tensor r = Tensor::uniform({2, 5, D}, -1, 1, rng);

    GradientNorms norms;
    for (bool residual : {true, false}) {
        std::vector<Tensor> z{input.detach()};
        z[0].requires_grad_();
        for (int64_t l = 0; l < L; ++l) {
            ViTBlock& b = *blocks[l];
            // [snippet:with-without-residuals]
            Tensor next = residual ? b.forward(z.back())
                                   : b.mlp->forward(b.norm2->forward(b.attn->forward(b.norm1->forward(z.back()))));
            // [/snippet:with-without-residuals]
            next.retain_grad();
            z.push_back(next);
        }
        sum(z.back() * r).backward();
        std::vector<double>& out = residual ? norms.with_residuals : norms.without_residuals;
        for (const Tensor& zl : z) out.push_back(l2_norm(zl.grad()));
        for (auto& b : blocks) b->zero_grad();
    }
    return norms;
}

void residuals(const std::string& dir) {
    tutorial::heading("5. residual connections: |dL/dz_l| through 24 blocks");
    const int64_t L = 24;
    GradientNorms g = gradient_through_depth(L);
    std::cout << "layer l   with residuals   without\n";
    for (int64_t l = L; l >= 0; l -= 4)
        std::cout << (l < 10 ? " " : "") << l << "        " << sci(g.with_residuals[l]) << "        "
                  << sci(g.without_residuals[l]) << "\n";

    Series with{"with residuals", {}, {}}, without{"without", {}, {}};
    for (int64_t l = 0; l <= L; ++l) {
        with.x.push_back(double(l));
        with.y.push_back(std::log10(g.with_residuals[l]));
        without.x.push_back(double(l));
        without.y.push_back(std::log10(g.without_residuals[l]));
    }
    const std::string path = dir + "/grad_norms.png";
    save(line_chart("gradient reaching z_l, 24 blocks", "layer l", "log10 |dL/dz_l|", {with, without}, 400, 260), path);
    std::cout << "wrote "
              << "grad_norms.png"
              << "\n";
}

// ---- 6. dropout and drop path ----------------------------------------------------------
void dropout_and_drop_path() {
    tutorial::heading("6. dropout and drop path (stochastic depth)");
    Rng rng(5);
    auto dropout_rng = std::make_shared<Rng>(6);
    const int64_t D = 8;
    BlockConfig config = block_config(D, 2);
    config.dropout = 0.1;  // attention projection and MLP
    config.attn_dropout = 0.1;
    config.drop_path = 0.5;
    ViTBlock block(config, rng, dropout_rng);
    for (const auto& [name, m] : block.named_modules())
        if (m->type_name() == "Dropout" || m->type_name() == "DropPath")
            std::cout << name << " (" << m->type_name() << ")\n";

    DropPath drop(0.5, dropout_rng);
    Tensor ones = Tensor::ones({8, 2, 3});
    Tensor dropped = drop.forward(ones);
    std::cout << "DropPath(0.5) on ones [8, 2, 3], first value of each sample:";
    for (int64_t b = 0; b < 8; ++b) std::cout << " " << fixed(dropped.at({b, 0, 0}), 1);
    std::cout << "\n";

    scramble_parameters(block, rng);
    Tensor z = Tensor::uniform({16, 5, D}, -1, 1, rng);
    Tensor trained = block.forward(z);
    int64_t unchanged = 0;
    for (int64_t b = 0; b < 16; ++b) unchanged += max_abs_difference(select(trained, 0, b), select(z, 0, b)) == 0;
    std::cout << "training: " << unchanged << " of 16 samples left unchanged (both branches dropped)\n";
    block.eval();
    std::cout << "eval: two forwards differ by " << max_abs_difference(block.forward(z), block.forward(z)) << "\n";
}

// ---- 7. ViT from scratch's block --------------------------------------------------------
// A copy of `block` whose layer `layer` ("attn.proj" or "mlp.fc2") outputs zeros: the residual
// branch it ends adds nothing, so the copy returns z plus the other branch alone.
std::unique_ptr<ViTBlock> without_branch(const ViTBlock& block, const BlockConfig& config, const std::string& layer) {
    Rng unused(0);
    auto copy = std::make_unique<ViTBlock>(config, unused, nullptr);
    load_state_dict(*copy, state_dict(block));
    for (Tensor p : {copy->parameter(layer + ".weight"), copy->parameter(layer + ".bias")})
        for (int64_t i = 0; i < p.numel(); ++i) p.data()[i] = 0;
    return copy;
}

void scratch_block() {
    tutorial::heading("7. where the documents go wrong: ViT from scratch feeds LN(x) to the MLP");
    Rng rng(6);
    const int64_t D = 8;
    const BlockConfig config = block_config(D, 2);
    ViTBlock block(config, rng, nullptr);
    scramble_parameters(block, rng);
    Tensor x = Tensor::uniform({1, 5, D}, -1, 1, rng);
    // [snippet:scratch-block]
    // ViT from scratch:  out = self.mhsa(self.layernorm1(x)) + x
    //                   out = self.feedforward(self.layernorm2(x)) + out
    // Both branches read x: x + attention branch + MLP branch, each branch taken from a copy
    // of the block whose other branch outputs zeros.
    Tensor attention_only = without_branch(block, config, "mlp.fc2")->forward(x);  // x + MSA(LN(x))
    Tensor mlp_only = without_branch(block, config, "attn.proj")->forward(x);      // x + MLP(LN(x))
    Tensor scratch = attention_only + mlp_only - x;
    Tensor paper = block.forward(x);  // eq. (3): MLP(LN(z')) + z'
    // [/snippet:scratch-block]
    std::cout << "paper,            token 0: " << first_features(paper, 0, 4) << " ...\n";
    std::cout << "ViT from scratch, token 0: " << first_features(scratch, 0, 4) << " ...\n";
    std::cout << "max |difference| = " << fixed(max_abs_difference(paper, scratch), 4) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::string dir = tutorial::out_dir(argc, argv, "tutorial_08_block");
        parameters_of_a_block();
        block_on_a_batch();
        the_mlp();
        residuals(dir);
        dropout_and_drop_path();
        scratch_block();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "tutorial_08_block: " << e.what() << "\n";
        return 1;
    }
}
