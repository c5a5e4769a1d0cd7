// summary.h — what `patchgrad summary` prints: a torchsummary-style table of a ViT
// configuration (layer, output shape for a batch of one image, parameters) and the total.
//
// The table is worked out from the configuration alone, following the forward pass step by
// step, so summarising ViT-H/14 (632M parameters, 2.5 GB of floats) allocates no weights, no
// gradients and runs no forward pass. tests/vit/test_summary.cpp checks, row by row, that it
// describes the model VisionTransformer really builds (names, types, parameter counts).
//
// Unlike torchsummary, the total includes the parameters that belong to no layer: cls_token
// and pos_embed. torchsummary only counts the weights and biases of layers, which is why
// Visual Transformer in CV's table for ViT-B/16 ends at 86,415,592: that is 86,567,656 (timm's
// vit_base_patch16_224) minus cls_token (768) and pos_embed (197 x 768), 152,064 parameters.
#pragma once

#include <string>
#include <vector>

#include "patchgrad/autograd/tensor.h"
#include "patchgrad/vit/vision_transformer.h"

namespace patchgrad {

struct SummaryRow {
    std::string name;    // a module's dotted name ("blocks.0.attn.qkv"), a parameter's ("cls_token"), or "pool"
    std::string type;    // the module's type_name(), "Parameter", or what the step does
    Shape output_shape;  // after this step, for a batch of one image
    int64_t parameters;  // the parameters this row owns
};

struct ModelSummary {
    ViTConfig config;
    std::vector<SummaryRow> rows;

    int64_t total_parameters() const;
    // cls_token and pos_embed: the parameters torchsummary leaves out.
    int64_t parameters_outside_layers() const;
    std::string table() const;
};

// Validates the configuration (see validate()) and lists every step of its forward pass.
ModelSummary summarize(const ViTConfig& config);

// 86567656 -> "86,567,656"
std::string with_thousands(int64_t n);

// ---- counting the work ------------------------------------------------------------------
// Multiply-adds of one image's forward pass, counting the matrix products only (the
// LayerNorms, GELU, residual adds and the loss are O(tokens * D), the softmax
// O(heads * tokens^2): a few percent).
// With N patches, T = N + 1 tokens, D = dim, F = MLP hidden size, K classes, L blocks:
//   patch embedding   N * (C * P * P) * D
//   per block         qkv T * D * 3D  +  QK^T T * T * D  +  AV T * T * D  (all heads together)
//                     + proj T * D * D  +  fc1 T * D * F  +  fc2 T * F * D
//   head              D * K  (+ D * D for the pre-training head's hidden layer)
// In training, patch dropout leaves the blocks T = 1 + K' tokens (patch_dropout_kept).
double forward_multiply_adds(const ViTConfig& c, bool training);
// GFLOP of one image in one training step: a multiply-add is 2 FLOPs, and a step costs about
// 3 forward passes: the backward of every product computes two products of the same size,
// one for the input's gradient and one for the weight's (the patch embedding needs no image
// gradient, so 3x slightly overcounts it), the convention of PyTorch profilers and MFU
// estimates. What `patchgrad bench` prints, and what a training budget is counted in.
double training_gflop_per_image(const ViTConfig& c);
// A run's training compute: training_gflop_per_image times its image passes (epochs times
// training images), in TFLOP, the unit the presets' budgets are counted in.
double training_tflop(const ViTConfig& c, double image_passes);

}  // namespace patchgrad
