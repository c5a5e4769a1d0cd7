// Chapter 11: looking inside a ViT. Builds a small ViT for 32x32 images, prints the numbers
// behind each of `patchgrad inspect`'s pictures (position-embedding similarity, attention
// maps and rollout, mean attention distance, principal components of E) for the model as
// initialised and after 40 AdamW steps on synthetic CIFAR-10-like images, and writes the five
// pictures of the briefly trained model (and the similarity of a fixed sinusoidal encoding)
// into --out DIR. Everything runs in float64 and is seeded, so every number is reproducible.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/vit/inspect.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;
namespace fs = std::filesystem;

namespace {

ViTConfig small_config(bool learnable_pos_embed) {
    ViTConfig c = vit_config("cifar-tiny");
    c.name = learnable_pos_embed ? "tutorial-small" : "tutorial-small-sinusoidal";
    c.dim = 32;
    c.depth = 3;
    c.heads = 4;
    c.mlp_dim = 64;
    c.learnable_pos_embed = learnable_pos_embed;
    return c;
}

// Patch r, c (1-based, as in the pictures) -> its row of the [N, N] similarity.
double similarity(const Matrix& s, const PatchGrid& grid, int64_t r1, int64_t c1, int64_t r2, int64_t c2) {
    return s((r1 - 1) * grid.cols + c1 - 1, (r2 - 1) * grid.cols + c2 - 1);
}

void print_similarities(const char* name, const Matrix& s, const PatchGrid& grid) {
    std::printf("%-30s %9.4f %9.4f %9.4f %9.4f\n", name, similarity(s, grid, 4, 4, 4, 5),
                similarity(s, grid, 4, 4, 5, 4), similarity(s, grid, 4, 4, 4, 8), similarity(s, grid, 4, 4, 8, 8));
}

void print_distances(const Matrix& d) {
    for (int64_t l = 0; l < d.rows; ++l) {
        std::printf("layer %lld:", static_cast<long long>(l + 1));
        for (int64_t h = 0; h < d.cols; ++h) std::printf(" %7.3f", d(l, h));
        std::printf("\n");
    }
}

void print_components(const PrincipalComponents& pcs) {
    std::printf("share of the variance, components 1-6:");
    for (int64_t c = 0; c < 6; ++c) std::printf(" %5.1f%%", 100 * pcs.explained[static_cast<size_t>(c)]);
    std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
    std::string out;
    try {
        out = tutorial::out_dir(argc, argv, "tutorial_11_inspect");
    } catch (const std::invalid_argument& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    fs::create_directories(out);

    const ViTConfig config = small_config(true);
    VisionTransformer model(config, 0);
    const PatchGrid grid = PatchGrid::of(config);
    const ImageSet images = synthetic_cifar10(200, 1);
    const ChannelStats stats = ChannelStats::cifar10();
    std::printf("%s\n", describe(config).c_str());
    std::printf("patch grid: %lld x %lld patches of %lld x %lld pixels, N = %lld, T = N + 1 = %lld tokens\n",
                static_cast<long long>(grid.rows), static_cast<long long>(grid.cols),
                static_cast<long long>(grid.patch), static_cast<long long>(grid.patch),
                static_cast<long long>(grid.size()), static_cast<long long>(grid.size() + 1));

    // ---- 2. position-embedding similarity ---------------------------------------------------
    std::printf("\n== 2. Cosine similarity of position embeddings, patch (4, 4) with ... ==\n");
    std::printf("%-30s %9s %9s %9s %9s\n", "", "(4, 5)", "(5, 4)", "(4, 8)", "(8, 8)");
    print_similarities("learned, as initialised", cosine_similarity_matrix(patch_position_embeddings(model)), grid);
    const VisionTransformer sinusoidal(small_config(false), 0);
    const Matrix fixed = cosine_similarity_matrix(patch_position_embeddings(sinusoidal));
    print_similarities("sinusoidal (fixed)", fixed, grid);

    // ---- 3. attention maps and rollout ---------------------------------------------------------
    std::printf("\n== 3. Attention maps of image 3, as initialised ==\n");
    // [snippet:record-attention]
    const std::vector<Tensor> attention = record_attention_maps(model, to_tensor(images.subset({3}), stats));
    const Matrix rollout = attention_rollout(attention, 0);
    // [/snippet:record-attention]
    std::printf("%zu maps of shape %s\n", attention.size(), shape_str(attention[0].shape()).c_str());
    const std::vector<double> head1 = class_token_attention(attention.back(), 0, 0);
    double patch_share = 0, top = 0, rollout_sum = 0;
    for (double a : head1) patch_share += a, top = std::max(top, a);
    for (int64_t j = 0; j < rollout.cols; ++j) rollout_sum += rollout(0, j);
    std::printf(
        "last layer, head 1: the class token gives %.4f to the patches and %.4f to itself; "
        "largest %.4f (uniform: 1/65 = %.4f)\n",
        patch_share, 1 - patch_share, top, 1.0 / 65);
    std::printf("rollout row 0 sums to %.6f; it keeps %.4f on the class token itself\n", rollout_sum, rollout(0, 0));

    // ---- 4. mean attention distance ---------------------------------------------------------------
    std::printf("\n== 4. Mean attention distance in pixels, [layers, heads], first 32 images ==\n");
    std::printf("uniform attention would give %.3f pixels\n", mean_patch_distance(grid));
    std::vector<int64_t> first(32);
    for (int64_t i = 0; i < 32; ++i) first[static_cast<size_t>(i)] = i;
    const Tensor batch = to_tensor(images.subset(first), stats);
    print_distances(mean_attention_distance(record_attention_maps(model, batch), grid));

    // ---- 5. principal components of E ---------------------------------------------------------------
    std::printf("\n== 5. Principal components of E [%lld, %lld], as initialised ==\n",
                static_cast<long long>(config.dim),
                static_cast<long long>(config.channels * config.patch_size * config.patch_size));
    print_components(principal_components(embedding_filters(model), 6));

    // ---- 6. a few training steps ------------------------------------------------------------------------
    std::printf("\n== 6. After 40 AdamW steps (batch 16) on the synthetic images ==\n");
    // [snippet:few-steps]
    AdamW optimizer(split_weight_decay(model.named_parameters()), 2e-3, {0.9, 0.999}, 1e-8, 0.05);
    for (int64_t step = 0; step < 40; ++step) {
        std::vector<int64_t> indices;
        for (int64_t i = 0; i < 16; ++i) indices.push_back(32 + (step * 16 + i) % 168);  // not the first 32
        const ImageSet b = images.subset(indices);
        Tensor loss = cross_entropy(model.forward(to_tensor(b, stats)), b.labels);
        loss.backward();
        optimizer.step();
        optimizer.zero_grad();
        if (step % 10 == 9)
            std::printf("step %2lld: loss %.4f\n", static_cast<long long>(step + 1), double(loss.item()));
    }
    // [/snippet:few-steps]
    std::printf("\n%-30s %9s %9s %9s %9s\n", "similarity of (4, 4) with", "(4, 5)", "(5, 4)", "(4, 8)", "(8, 8)");
    print_similarities("learned, after 40 steps", cosine_similarity_matrix(patch_position_embeddings(model)), grid);
    std::printf("\nmean attention distance after 40 steps:\n");
    print_distances(mean_attention_distance(record_attention_maps(model, batch), grid));
    print_components(principal_components(embedding_filters(model), 6));

    // ---- the pictures -----------------------------------------------------------------------------------
    // [snippet:write-inspection]
    InspectOptions options;
    options.model_name = "tutorial-small after 40 steps on synthetic data";
    options.image = 3;
    options.distance_images = 32;
    const Inspection inspection = write_inspection(model, images, stats, out, options);
    // [/snippet:write-inspection]
    save(position_similarity_picture(fixed, grid, "fixed sinusoidal encoding (ViT from scratch), no training"),
         (fs::path(out) / "pos_similarity_sinusoidal.png").string());
    std::printf("\nwrote");
    for (const std::string& file : inspection.files) std::printf(" %s", fs::path(file).filename().string().c_str());
    std::printf(" pos_similarity_sinusoidal.png\n");
    return 0;
}
