#include "patchgrad/vit/summary.h"

#include <algorithm>
#include <sstream>

namespace patchgrad {

namespace {
int64_t linear_parameters(int64_t in, int64_t out, bool bias) { return in * out + (bias ? out : 0); }
int64_t layer_norm_parameters(int64_t dim) { return 2 * dim; }
}  // namespace

ModelSummary summarize(const ViTConfig& c) {
    validate(c);
    ModelSummary s{c, {}};
    auto row = [&](const std::string& name, const std::string& type, Shape shape, int64_t parameters) {
        s.rows.push_back({name, type, std::move(shape), parameters});
    };
    const int64_t N = c.num_patches(), T = N + 1, D = c.dim, CPP = c.channels * c.patch_size * c.patch_size;
    const int64_t hidden = c.mlp_hidden();

    row("patch_embed.patcher", "Patcher", {1, N, CPP}, 0);
    row("patch_embed.proj", "Linear", {1, N, D}, linear_parameters(CPP, D, true));
    row("cls_token", "Parameter", {1, T, D}, D);
    if (c.learnable_pos_embed)
        row("pos_embed", "Parameter", {1, T, D}, T * D);
    else
        row("pos_embed", "sinusoidal, fixed", {1, T, D}, 0);
    row("pos_drop", "Dropout", {1, T, D}, 0);
    if (c.patch_dropout > 0) row("patch_drop", "PatchDropout", {1, T, D}, 0);  // in training: fewer tokens
    // [exercise:summary-block-rows]
    for (int64_t l = 0; l < c.depth; ++l) {
        const std::string b = "blocks." + std::to_string(l) + ".";
        row(b + "norm1", "LayerNorm", {1, T, D}, layer_norm_parameters(D));
        if (c.lsa) row(b + "attn", "MultiHeadSelfAttention", {1, T, D}, c.heads);  // its own: LSA's scale
        row(b + "attn.qkv", "Linear", {1, T, 3 * D}, linear_parameters(D, 3 * D, c.qkv_bias));
        row(b + "attn.attn_drop", "Dropout", {1, c.heads, T, T}, 0);
        row(b + "attn.proj", "Linear", {1, T, D}, linear_parameters(D, D, true));
        row(b + "attn.proj_drop", "Dropout", {1, T, D}, 0);
        row(b + "drop_path1", "DropPath", {1, T, D}, 0);
        row(b + "norm2", "LayerNorm", {1, T, D}, layer_norm_parameters(D));
        row(b + "mlp.fc1", "Linear", {1, T, hidden}, linear_parameters(D, hidden, true));
        row(b + "mlp.act", "GELU", {1, T, hidden}, 0);
        row(b + "mlp.drop1", "Dropout", {1, T, hidden}, 0);
        row(b + "mlp.fc2", "Linear", {1, T, D}, linear_parameters(hidden, D, true));
        row(b + "mlp.drop2", "Dropout", {1, T, D}, 0);
        row(b + "drop_path2", "DropPath", {1, T, D}, 0);
    }
    // [/exercise:summary-block-rows]
    if (c.pool == Pool::Seq) row("attention_pool", "Linear", {1, T, 1}, linear_parameters(D, 1, true));
    const char* pooling = c.pool == Pool::Seq    ? "softmax-weighted mean of the tokens"
                          : c.pool == Pool::Mean ? "mean of all tokens"
                                                 : "class token z_L^0";
    row("pool", pooling, {1, D}, 0);
    row("norm", "LayerNorm", {1, D}, layer_norm_parameters(D));
    if (c.head == Head::Mlp) {
        row("pre_logits.fc", "Linear", {1, D}, linear_parameters(D, D, true));
        row("pre_logits.act", "Tanh", {1, D}, 0);
    }
    row("head", "Linear", {1, c.num_classes}, linear_parameters(D, c.num_classes, true));
    return s;
}

int64_t ModelSummary::total_parameters() const {
    int64_t n = 0;
    for (const SummaryRow& r : rows) n += r.parameters;
    return n;
}

int64_t ModelSummary::parameters_outside_layers() const {
    int64_t n = 0;
    for (const SummaryRow& r : rows)
        if (r.type == "Parameter") n += r.parameters;
    return n;
}

std::string with_thousands(int64_t n) {
    std::string digits = std::to_string(n < 0 ? -n : n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return n < 0 ? "-" + out : out;
}

std::string ModelSummary::table() const {
    const ViTConfig& c = config;
    size_t layer_w = std::string("Layer (type)").size(), shape_w = std::string("Output Shape").size();
    size_t param_w = std::string("Param #").size();
    for (const SummaryRow& r : rows) {
        layer_w = std::max(layer_w, r.name.size() + r.type.size() + 3);
        shape_w = std::max(shape_w, shape_str(r.output_shape).size());
        param_w = std::max(param_w, with_thousands(r.parameters).size());
    }
    const size_t width = layer_w + 2 + shape_w + 2 + param_w;
    const std::string dashes(width, '-'), equals(width, '=');
    auto pad_right = [](const std::string& s, size_t w) { return s + std::string(w - s.size(), ' '); };
    auto pad_left = [](const std::string& s, size_t w) { return std::string(w - s.size(), ' ') + s; };

    std::ostringstream os;
    os << describe(c) << "\n";
    os << dashes << "\n"
       << pad_right("Layer (type)", layer_w) << "  " << pad_right("Output Shape", shape_w) << "  "
       << pad_left("Param #", param_w) << "\n"
       << equals << "\n";
    for (const SummaryRow& r : rows)
        os << pad_right(r.name + " (" + r.type + ")", layer_w) << "  " << pad_right(shape_str(r.output_shape), shape_w)
           << "  " << pad_left(with_thousands(r.parameters), param_w) << "\n";
    os << equals << "\n"
       << "Total params: " << with_thousands(total_parameters()) << "\n"
       << dashes << "\n"
       << "Includes cls_token and pos_embed (" << with_thousands(parameters_outside_layers())
       << " here), parameters outside any layer.\n"
       << "torchsummary counts only layer weights: its table for ViT-B/16 totals 86,415,592,\n"
       << "which is 86,567,656 minus the class token and position embedding (768 + 197 x 768 = 152,064).\n";
    return os.str();
}

double forward_multiply_adds(const ViTConfig& c, bool training) {
    const int64_t patches = c.num_patches();
    const int64_t tokens =
        1 + (training && c.patch_dropout > 0 ? patch_dropout_kept(c.patch_dropout, patches) : patches);
    const double N = double(patches), T = double(tokens), D = double(c.dim), F = double(c.mlp_hidden());
    const double K = double(c.num_classes), patch_dim = double(c.channels * c.patch_size * c.patch_size);
    const double block = T * D * 3 * D + 2 * T * T * D + T * D * D + 2 * T * D * F;
    const double head = D * K + (c.head == Head::Mlp ? D * D : 0);
    return N * patch_dim * D + double(c.depth) * block + head;
}

double training_gflop_per_image(const ViTConfig& c) { return 3 * 2 * forward_multiply_adds(c, true) * 1e-9; }

double training_tflop(const ViTConfig& c, double image_passes) {
    return training_gflop_per_image(c) * image_passes * 1e-3;
}

}  // namespace patchgrad
