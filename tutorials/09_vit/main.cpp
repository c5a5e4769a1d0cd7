// tutorial_09_vit — the program of chapter 9, the whole Vision Transformer.
//
// It assembles a small VisionTransformer and lists its parameters and parts, runs its forward
// pass as one call, prints the shapes on the way (images -> patches -> x_p E -> logits) and checks
// that each image's logits ignore the other images, compares cls and mean pooling on the same
// weights and checks that seq pooling with w = 0 is mean pooling, looks at the two heads (and
// ViT from scratch's three-Linear pre-training head), counts the parameters of the paper's
// variants with a formula checked against summarize() and against real models, and
// gradient-checks a whole small model. Everything is float64 and seeded; nothing big is
// allocated (ViT-H/14 in float64 would need 5 GB: its count comes from the formula and
// summarize()).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/gradcheck.h"
#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/layers/linear.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/vision_transformer.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

namespace {

using tutorial::fixed;
using tutorial::max_abs_difference;

// The first n entries of row 0 of x [B, K].
std::string row0(const Tensor& x, int64_t n) {
    std::string s;
    for (int64_t k = 0; k < n; ++k) s += (k ? " " : "") + fixed(x.at({0, k}), 4);
    return s;
}

// 16x16 RGB images, patch 4 (4 x 4 = 16 patches), D = 16, 2 blocks of 2 heads, MLP 32, 10 classes.
ViTConfig small_config() {
    ViTConfig c;
    c.name = "small";
    c.image_height = c.image_width = 16;
    c.patch_size = 4;
    c.dim = 16;
    c.depth = 2;
    c.heads = 2;
    c.mlp_dim = 32;
    c.num_classes = 10;
    return c;
}

// ---- 3. assembling the model, 4. the forward pass -----------------------------------------
void assemble() {
    tutorial::heading("3. the whole model, piece by piece");
    const ViTConfig c = small_config();
    std::cout << describe(c) << "\n";
    VisionTransformer model(c, 9);
    for (const auto& [name, p] : model.named_parameters())
        if (name.find('.') == std::string::npos) std::cout << name << " " << shape_str(p.shape()) << "\n";
    for (const auto& [name, child] : model.children())
        std::cout << name << " (" << child->type_name() << ") " << child->num_parameters() << " parameters\n";
    std::cout << "total " << model.num_parameters() << " parameters\n";

    tutorial::heading("4. the forward pass");
    Rng rng(10);
    scramble_parameters(model, rng);
    Tensor images = Tensor::uniform({2, 3, 16, 16}, -1, 1, rng);
    model.record_attention(true);
    const Tensor logits = model.forward(images);
    const Tensor A = model.attention_maps().front();  // block 0's attention [B, heads, N+1, N+1]
    model.record_attention(false);
    std::cout << "images " << shape_str(images.shape()) << " -> patches "
              << shape_str(model.patch_embed->patcher->forward(images).shape()) << " -> x_p E "
              << shape_str(model.patch_embed->forward(images).shape()) << " -> logits " << shape_str(logits.shape())
              << "\n";
    std::cout << "the blocks' tokens: A of block 0 " << shape_str(A.shape())
              << ", N + 1 = 16 patches + the class token\n";
    // Every step works on each image alone (LN per token, attention within a sequence).
    Tensor changed = images.detach();
    for (int64_t i = changed.numel() / 2; i < changed.numel(); ++i) changed.data()[i] = 0;
    std::cout << "image 1 set to zero: max |difference| in image 0's logits = "
              << max_abs_difference(select(model.forward(changed), 0, 0), select(logits, 0, 0)) << "\n";
}

// ---- 5. cls or mean pooling ------------------------------------------------------------
void pooling() {
    tutorial::heading("5. pooling: the class token, or the mean of the tokens");
    ViTConfig c = small_config();
    VisionTransformer cls_model(c, 9);
    c.pool = Pool::Mean;
    VisionTransformer mean_model(c, 9);  // the same seed: the same weights (pooling has none)
    Rng rng(10), rng2(10);
    scramble_parameters(cls_model, rng);
    scramble_parameters(mean_model, rng2);
    Tensor images = Tensor::uniform({2, 3, 16, 16}, -1, 1, rng);
    std::cout << "same weights: max |difference| = "
              << max_abs_difference(cls_model.parameter("blocks.1.mlp.fc2.weight"),
                                    mean_model.parameter("blocks.1.mlp.fc2.weight"))
              << "\n";

    const Tensor cls_logits = cls_model.forward(images), mean_logits = mean_model.forward(images);
    std::cout << "cls pooling,  logits of image 0: " << row0(cls_logits, 4) << " ...\n";
    std::cout << "mean pooling, logits of image 0: " << row0(mean_logits, 4) << " ...\n";

    // Sequence pooling with the same weights and w = 0, b = 0: every token gets weight 1/(N+1).
    c.pool = Pool::Seq;
    VisionTransformer seq_model(c, 9);
    for (const auto& [name, p] : seq_model.named_parameters()) {
        Tensor to = p;
        if (name.rfind("attention_pool.", 0) == 0)
            std::fill(to.data(), to.data() + to.numel(), real(0));
        else
            std::copy(mean_model.parameter(name).data(), mean_model.parameter(name).data() + to.numel(), to.data());
    }
    std::cout << "seq pooling with w = 0, b = 0 = mean pooling: max |difference| < 1e-12: "
              << (max_abs_difference(seq_model.forward(images), mean_logits) < 1e-12 ? "yes" : "NO") << "\n";
}

// ---- 6. the classification head --------------------------------------------------------
void heads() {
    tutorial::heading("6. the head: one Linear (fine-tuning) or pre_logits + Linear (pre-training)");
    ViTConfig c = vit_config("vit-b16");
    const ModelSummary linear_head = summarize(c);
    c.head = Head::Mlp;
    const ModelSummary mlp_head = summarize(c);
    std::cout << "ViT-B/16, head linear: " << with_thousands(linear_head.total_parameters()) << " parameters\n";
    std::cout << "ViT-B/16, head mlp:    " << with_thousands(mlp_head.total_parameters())
              << " (+ pre_logits.fc 768 x 768 + 768 = " << with_thousands(768 * 768 + 768) << ")\n";
    // ViT from scratch's is_pretrain head: Linear(768, 3072) -> Linear(3072, 3072) -> Linear(3072, 1000)
    const int64_t scratch_head = (768 * 3072 + 3072) + (3072 * 3072 + 3072) + (3072 * 1000 + 1000);
    std::cout << "ViT from scratch's three-Linear head for ViT-B/16: " << with_thousands(scratch_head)
              << " parameters\n";

    // Three Linear layers with nothing between them are one affine map (W3 W2 W1, W3 (W2 b1 + b2) + b3).
    Rng rng(30);
    Linear l1(8, 16, rng), l2(16, 16, rng), l3(16, 5, rng);
    for (Linear* l : {&l1, &l2, &l3}) scramble_parameters(*l, rng);
    // [snippet:collapse]
    Tensor W = matmul(l3.weight, matmul(l2.weight, l1.weight));                  // [5, 8]
    Tensor b = reshape(l3.forward(l2.forward(reshape(l1.bias, {1, 16}))), {5});  // [5]
    Tensor x = Tensor::uniform({4, 8}, -2, 2, rng);
    const double gap = max_abs_difference(l3.forward(l2.forward(l1.forward(x))), linear(x, W, b));
    std::cout << "ViT from scratch's head vs one Linear(W, b): max |difference| < 1e-12: "
              << (gap < 1e-12 ? "yes" : "no") << "\n";
    // [/snippet:collapse]
}

// ---- 7. the paper's variants and their parameter counts --------------------------------
// The number of parameters of `c`, from the shapes alone (the chapter derives it):
//   patch embedding E and its bias, x_class and E_pos, L blocks, the final LN and the head.
// [snippet:parameter-formula]
int64_t vit_parameters(const ViTConfig& c) {
    const int64_t D = c.dim, F = c.mlp_hidden(), N = c.num_patches(), K = c.num_classes;
    const int64_t CPP = c.channels * c.patch_size * c.patch_size;
    const int64_t embedding = CPP * D + D;                                           // E [D, C P P], bias [D]
    const int64_t tokens = D + (c.learnable_pos_embed ? (N + 1) * D : 0);            // x_class, E_pos
    const int64_t attention = 3 * D * D + (c.qkv_bias ? 3 * D : 0) + D * D + D;      // qkv, proj
    const int64_t mlp = D * F + F + F * D + D;                                       // fc1, fc2
    const int64_t block = 2 * D + attention + 2 * D + mlp;                           // norm1, norm2
    const int64_t head = 2 * D + (c.head == Head::Mlp ? D * D + D : 0) + D * K + K;  // norm, pre_logits, head
    return embedding + tokens + c.depth * block + head;
}
// [/snippet:parameter-formula]

void variants() {
    tutorial::heading("7. the paper's variants (Table 1) and the CIFAR configurations");
    std::printf("%-12s %5s %5s %5s %5s %5s %5s %14s %14s\n", "config", "patch", "D", "L", "heads", "MLP", "N",
                "formula", "summarize()");
    for (const std::string& name : vit_config_names()) {
        const ViTConfig c = vit_config(name);
        std::printf("%-12s %5lld %5lld %5lld %5lld %5lld %5lld %14s %14s\n", name.c_str(), (long long)c.patch_size,
                    (long long)c.dim, (long long)c.depth, (long long)c.heads, (long long)c.mlp_hidden(),
                    (long long)c.num_patches(), with_thousands(vit_parameters(c)).c_str(),
                    with_thousands(summarize(c).total_parameters()).c_str());
    }
    std::cout.flush();

    // The formula against models that are really built (small enough for float64).
    std::vector<ViTConfig> built{vit_config("cifar-tiny"), vit_config("cifar-small"), small_config()};
    ViTConfig other = small_config();
    other.name = "small-variant";
    other.pool = Pool::Mean;
    other.head = Head::Mlp;
    other.qkv_bias = false;
    other.learnable_pos_embed = false;
    other.mlp_dim = 0;
    other.mlp_ratio = 3;
    other.channels = 1;
    other.image_width = 24;
    built.push_back(other);
    for (const ViTConfig& c : built) {
        VisionTransformer model(c, 1);
        std::cout << c.name << ": formula " << with_thousands(vit_parameters(c)) << ", built model "
                  << with_thousands(model.num_parameters()) << "\n";
    }

    // ViT-B/16 term by term.
    const ViTConfig b16 = vit_config("vit-b16");
    const int64_t D = b16.dim, F = b16.mlp_hidden();
    std::cout << "ViT-B/16: E " << with_thousands(768 * D + D) << " + x_class " << D << " + E_pos "
              << with_thousands(197 * D) << " + 12 blocks x " << with_thousands(12 * D * D + 13 * D) << " + norm "
              << with_thousands(2 * D) << " + head " << with_thousands(D * 1000 + 1000) << " = "
              << with_thousands(vit_parameters(b16)) << "\n";
    std::cout << "one block: 4 D^2 + 2 D F + 9 D + F = " << with_thousands(4 * D * D + 2 * D * F + 9 * D + F)
              << " (= 12 D^2 + 13 D when F = 4 D)\n";
}

// ---- 7. where the documents go wrong: the counts ----------------------------------------
void document_counts() {
    tutorial::heading("7. Visual Transformer in CV's total and ViT from scratch's ViT-Huge");
    const ModelSummary b16 = summarize(vit_config("vit-b16"));
    std::cout << "ViT-B/16 total:                " << with_thousands(b16.total_parameters()) << "\n";
    std::cout << "cls_token + pos_embed:         " << with_thousands(b16.parameters_outside_layers()) << "\n";
    std::cout << "without them (Visual Transformer in CV's sum): "
              << with_thousands(b16.total_parameters() - b16.parameters_outside_layers()) << "\n";

    ViTConfig huge = vit_config("vit-h14");
    std::cout << "ViT-H/14, MLP 5120 (Table 1):  " << with_thousands(vit_parameters(huge)) << "\n";
    huge.mlp_dim = 4096;
    std::cout << "ViT-H/14, MLP 4096 (ViT from scratch): " << with_thousands(vit_parameters(huge)) << "\n";
    huge.patch_size = 16;
    std::cout << "ViT from scratch's ViT_Huge defaults (patch 16, MLP 4096): " << with_thousands(vit_parameters(huge))
              << "\n";
}

// ---- 8. the whole model's gradient -----------------------------------------------------
void whole_model_gradcheck() {
    tutorial::heading("8. a gradient check of the whole model");
    ViTConfig c = small_config();
    c.image_height = c.image_width = 8;  // 4 patches
    c.dim = 8;
    c.mlp_dim = 16;
    VisionTransformer model(c, 11);
    Rng rng(12);
    scramble_parameters(model, rng);
    // [snippet:whole-gradcheck]
    std::vector<Tensor> inputs{Tensor::uniform({2, 3, 8, 8}, -1, 1, rng, /*requires_grad=*/true)};
    for (const Tensor& p : model.parameters()) inputs.push_back(p);
    GradcheckOptions options;
    options.max_elements_per_input = 6;  // a sample of each input; tests/vit check every element
    auto loss = [&](const std::vector<Tensor>& xs) {
        Tensor logits = model.forward(xs[0]);
        return sum(logits * logits);
    };
    GradcheckResult result = gradcheck(loss, inputs, options);
    // [/snippet:whole-gradcheck]
    int64_t checked = 0;
    for (const InputReport& r : result.inputs) checked += r.checked;
    std::cout << inputs.size() << " inputs (the images and " << inputs.size() - 1 << " parameter tensors), " << checked
              << " elements checked: " << (result.passed() ? "passed" : "FAILED") << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    try {
        tutorial::out_dir(argc, argv, "tutorial_09_vit");  // no pictures in this chapter
        assemble();
        pooling();
        heads();
        variants();
        document_counts();
        whole_model_gradcheck();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "tutorial_09_vit: " << e.what() << "\n";
        return 1;
    }
}
