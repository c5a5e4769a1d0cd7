// test_checkpoint.cpp — checkpoints (vit/train/checkpoint.h): what is saved comes back exactly
// (weights, config, optimizer state, training position, RNG state), the file is in timm's
// layout, and every mismatch or broken file is reported naming the file and the tensor or field.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/autograd/version.h"
#include "patchgrad/layers/state_dict.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"
#include "vit/vit_test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

namespace {

// A config with a non-default value in every field a checkpoint must carry.
ViTConfig unusual_config() {
    ViTConfig c = tiny_vit_config();
    c.name = "unusual";
    c.mlp_dim = 0;
    c.mlp_ratio = 2.5f;
    c.pool = Pool::Mean;
    c.head = Head::Mlp;
    c.dropout = 0.125f;
    c.emb_dropout = 0.25f;
    c.attn_dropout = 0.0625f;
    c.drop_path = 0.1f;
    c.qkv_bias = false;
    c.learnable_pos_embed = false;
    c.gelu = GeluApproximation::Tanh;
    c.layer_norm_eps = 1e-5f;
    return c;
}

// One AdamW step on a random batch, so the optimizer has state to save.
void take_a_step(VisionTransformer& model, Optimizer& optimizer) {
    Rng rng(11);
    const Tensor images = Tensor::normal({2, 3, 32, 32}, 0, 1, rng);
    cross_entropy(model.forward(images), {1, 7}).backward();
    optimizer.step();
    optimizer.zero_grad();
}

TrainingState some_state() {
    TrainingState s;
    s.epoch = 3;
    s.step_in_epoch = 17;
    s.global_step = 1073;
    s.dropout_rng = {1, 18446744073709551615ull, 42, 9007199254740993ull};
    s.loss_sum = 1.0 / 3.0;
    s.correct = 12.75;
    s.seen = 2176;
    s.best_accuracy = 0.4567;
    s.elapsed_seconds = 1234.5678;
    s.epoch_seconds = 55.5;
    return s;
}

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data(), b.data(), sizeof(real) * static_cast<size_t>(a.numel())) == 0;
}

}  // namespace

TEST_CASE("checkpoint: weights, config, optimizer state, position and RNG state come back exactly", "[checkpoint]") {
    TempDir dir;
    const std::string path = dir.file("last.safetensors");
    VisionTransformer model(unusual_config(), 4);
    Rng rng(2);
    scramble_parameters(model, rng);
    AdamW optimizer(split_weight_decay(model.named_parameters()), 1e-3, {0.9, 0.999}, 1e-8, 0.05);
    take_a_step(model, optimizer);
    const TrainingState state = some_state();
    save_checkpoint(path, model, state, {{"lr", "0.001"}, {"preset", "quick"}}, &optimizer);

    const Checkpoint c = load_checkpoint(path);
    CHECK(c.path == path);
    CHECK(config_to_metadata(c.config) == config_to_metadata(unusual_config()));
    CHECK(c.config.gelu == GeluApproximation::Tanh);
    CHECK(c.config.mlp_ratio == 2.5f);
    CHECK(c.options == Metadata{{"lr", "0.001"}, {"preset", "quick"}});
    CHECK(c.state.epoch == 3);
    CHECK(c.state.step_in_epoch == 17);
    CHECK(c.state.global_step == 1073);
    CHECK(c.state.dropout_rng == state.dropout_rng);
    CHECK(c.state.loss_sum == 1.0 / 3.0);
    CHECK(c.state.correct == 12.75);
    CHECK(c.state.seen == 2176);
    CHECK(c.state.best_accuracy == 0.4567);
    CHECK(c.state.elapsed_seconds == 1234.5678);
    CHECK(c.state.epoch_seconds == 55.5);

    VisionTransformer copy(c.config, 99);
    AdamW copy_optimizer(split_weight_decay(copy.named_parameters()), 1e-3, {0.9, 0.999}, 1e-8, 0.05);
    load_weights(copy, c);
    load_optimizer_state(copy_optimizer, path, c.state.global_step);
    const auto original = model.named_parameters(), restored = copy.named_parameters();
    REQUIRE(original.size() == restored.size());
    for (size_t i = 0; i < original.size(); ++i) {
        INFO(original[i].first);
        CHECK(same_bits(original[i].second, restored[i].second));
    }
    const auto saved_state = optimizer.state_tensors(), loaded_state = copy_optimizer.state_tensors();
    REQUIRE(saved_state.size() == loaded_state.size());
    REQUIRE(!saved_state.empty());
    for (size_t i = 0; i < saved_state.size(); ++i) {
        INFO(saved_state[i].first);
        CHECK(saved_state[i].first == loaded_state[i].first);
        CHECK(same_bits(saved_state[i].second, loaded_state[i].second));
    }
    // Both continue identically once the dropout generator is where the state says (the
    // trainer restores it from state.dropout_rng).
    copy.dropout_rng->set_state(model.dropout_rng->state());
    take_a_step(model, optimizer);
    take_a_step(copy, copy_optimizer);
    CHECK(same_bits(model.head->weight, copy.head->weight));
}

TEST_CASE("checkpoint: the weights file is timm's state_dict, the patch projection as a Conv2d weight",
          "[checkpoint]") {
    TempDir dir;
    const std::string path = dir.file("best.safetensors");
    VisionTransformer model(tiny_vit_config(), 1);
    save_checkpoint(path, model, TrainingState{}, {});
    CHECK_FALSE(std::filesystem::exists(optimizer_state_path(path)));  // no optimizer given, no state file

    const NamedTensors file = load_safetensors(path);
    CHECK(file.metadata.at("format") == "patchgrad-checkpoint-1");
    CHECK(file.metadata.at("config.dim") == "16");
    CHECK(file.metadata.at("config.gelu") == "none");
    CHECK(file.metadata.at("state.dropout_rng.3") == std::to_string(TrainingState{}.dropout_rng[3]));
    const Tensor conv = file.get("patch_embed.proj.weight");
    CHECK(conv.shape() == Shape{16, 3, 8, 8});
    const Tensor linear = model.patch_embed->proj->weight;
    CHECK(linear.shape() == Shape{16, 192});
    CHECK(std::memcmp(conv.data(), linear.data(), sizeof(real) * 16 * 192) == 0);
    std::vector<std::string> names;
    for (const auto& [name, t] : file.tensors) names.push_back(name);
    std::vector<std::string> expected;
    for (const auto& [name, p] : model.named_parameters()) expected.push_back(name);
    CHECK(names == expected);
}

TEST_CASE("checkpoint: the version of patchgrad that wrote it is in the metadata, and older files without it load",
          "[checkpoint]") {
    TempDir dir;
    const std::string path = dir.file("best.safetensors");
    VisionTransformer model(tiny_vit_config(), 1);
    save_checkpoint(path, model, TrainingState{}, {});
    NamedTensors file = load_safetensors(path);
    CHECK(file.metadata.at("patchgrad.version") == kVersion);
    CHECK(load_checkpoint(path).version == kVersion);

    // What every patchgrad before 0.9.0 wrote: the same file without the key.
    file.metadata.erase("patchgrad.version");
    const std::string older = dir.file("older.safetensors");
    save_safetensors(older, file);
    const Checkpoint loaded = load_checkpoint(older);
    CHECK(loaded.version.empty());
    CHECK(loaded.config.dim == model.config.dim);
    VisionTransformer copy(loaded.config, 2);
    load_weights(copy, loaded);
    CHECK(same_bits(copy.head->weight, model.head->weight));
}

TEST_CASE("checkpoint: metadata numbers are written to read back exactly", "[checkpoint]") {
    for (double v : {0.1, 1e-5, 1.0 / 3.0, 0.1 + 0.2, -2.5e-300, 4.9e-324, 123456789.0, 0.0})
        CHECK(parse_double(exact_text(v), "test", "v") == v);
    CHECK(exact_text(0.001) == "0.001");
    CHECK(exact_text(0.05) == "0.05");
    CHECK(exact_text(100.0) == "100");
    // A float (drop path, dropout, LayerNorm eps) in its own shortest form, not its double's.
    for (float v : {0.1f, 1e-6f, 1.0f / 3.0f, 0.0f, 3.4e38f, 1e-45f})
        CHECK(static_cast<float>(parse_double(exact_text(v), "test", "v")) == v);
    CHECK(exact_text(0.1f) == "0.1");
    CHECK(exact_text(1e-6f) == "1e-06");
    CHECK(std::isnan(parse_double(exact_text(std::nan("")), "test", "v")));
    CHECK(parse_uint64("18446744073709551615", "w", "k") == 18446744073709551615ull);
    CHECK(parse_int64("-42", "w", "k") == -42);
    require_error([] { parse_double("1.5x", "ckpt", "state.loss_sum"); },
                  {"ckpt", "state.loss_sum", "'1.5x'", "number"});
    require_error([] { parse_int64("", "ckpt", "state.seen"); }, {"state.seen", "integer"});
    require_error([] { parse_int64("99999999999999999999", "ckpt", "state.seen"); }, {"state.seen"});
    require_error([] { parse_uint64("-1", "ckpt", "seed"); }, {"seed", "unsigned"});
    require_error([] { parse_bool("yes", "ckpt", "config.qkv_bias"); }, {"config.qkv_bias", "'yes'"});
    CHECK(optimizer_state_path("runs/x/last.safetensors") == "runs/x/last.state.safetensors");
    CHECK(optimizer_state_path("ckpt") == "ckpt.state");
}

TEST_CASE("checkpoint: a different config or shape is refused naming the field or tensor", "[checkpoint][errors]") {
    TempDir dir;
    const std::string path = dir.file("last.safetensors");
    VisionTransformer model(tiny_vit_config(), 1);
    save_checkpoint(path, model, TrainingState{}, {});
    const Checkpoint c = load_checkpoint(path);

    ViTConfig wider = tiny_vit_config();
    wider.dim = 32;
    require_error([&] { check_config(c, wider); }, {path, "config dim 16 in the checkpoint, 32 requested"});
    ViTConfig tanh = tiny_vit_config();
    tanh.gelu = GeluApproximation::Tanh;
    require_error([&] { check_config(c, tanh); }, {"config gelu none in the checkpoint, tanh requested"});
    check_config(c, tiny_vit_config());

    ViTConfig bigger_mlp = tiny_vit_config();
    bigger_mlp.mlp_dim = 64;
    VisionTransformer other(bigger_mlp, 1);
    const NamedTensors before = state_dict(other);
    require_error([&] { load_weights(other, c); },
                  {path, "blocks.0.mlp.fc1.weight has shape [32, 16] but the model expects [64, 16]"});
    CHECK(same_bits(state_dict(other).get("blocks.0.mlp.fc1.bias"), before.get("blocks.0.mlp.fc1.bias")));

    ViTConfig bigger_patch = tiny_vit_config();
    bigger_patch.patch_size = 16;
    VisionTransformer coarse(bigger_patch, 1);
    require_error([&] { load_weights(coarse, c); },
                  {"pos_embed has shape [1, 17, 16] but the model expects [1, 5, 16]"});

    // The patch projection in patchgrad's own [D, C*P*P] layout is not the file format.
    Checkpoint linear_layout = c;
    for (auto& [name, t] : linear_layout.weights.tensors)
        if (name == "patch_embed.proj.weight") t = Tensor::zeros({16, 192});
    VisionTransformer same_shape(tiny_vit_config(), 1);
    require_error([&] { load_weights(same_shape, linear_layout); },
                  {"patch_embed.proj.weight has shape [16, 192] but the model expects [16, 3, 8, 8]"});

    ViTConfig two_blocks = tiny_vit_config();
    two_blocks.depth = 2;
    VisionTransformer deeper(two_blocks, 1);
    require_error([&] { load_weights(deeper, c); }, {path, "blocks.1.norm1.weight is missing"});

    Checkpoint extra = c;
    extra.weights.tensors.emplace_back("blocks.7.attn.qkv.weight", Tensor::zeros({1}));
    VisionTransformer same(tiny_vit_config(), 2);
    require_error([&] { load_weights(same, extra); }, {"unexpected tensor blocks.7.attn.qkv.weight"});
}

TEST_CASE("checkpoint: broken, foreign and mismatched files are reported naming the file", "[checkpoint][errors]") {
    TempDir dir;
    VisionTransformer model(tiny_vit_config(), 1);

    const std::string corrupt = dir.file("corrupt.safetensors");
    write_bytes(corrupt, std::string("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\": [1, 2}}   ", 24));
    require_error([&] { load_checkpoint(corrupt); }, {corrupt});

    const std::string foreign = dir.file("timm.safetensors");
    save_module(foreign, model);
    require_error([&] { load_checkpoint(foreign); }, {foreign, "not a patchgrad checkpoint"});

    const std::string no_dim = dir.file("no-dim.safetensors");
    NamedTensors named = state_dict(model);
    named.metadata = {{"format", kCheckpointFormat}};
    for (const auto& [key, value] : config_to_metadata(model.config))
        if (key != "dim") named.metadata["config." + key] = value;
    save_safetensors(no_dim, named);
    require_error([&] { load_checkpoint(no_dim); }, {no_dim, "config.dim is missing"});

    const std::string path = dir.file("last.safetensors");
    AdamW optimizer(split_weight_decay(model.named_parameters()));
    take_a_step(model, optimizer);
    TrainingState state;
    state.global_step = 5;
    save_checkpoint(path, model, state, {}, &optimizer);
    SGD sgd(model.parameters(), 0.1, 0.9);
    require_error([&] { load_optimizer_state(optimizer, path, 6); },
                  {optimizer_state_path(path), "global step 5", "step 6", "different saves"});
    require_error([&] { load_optimizer_state(sgd, path, 5); }, {"SGD"});
    std::filesystem::remove(optimizer_state_path(path));
    require_error([&] { load_optimizer_state(optimizer, path, 5); }, {optimizer_state_path(path), "missing"});
}

TEST_CASE("checkpoint: the resume file is a complete save, an older run's state file still resumes",
          "[checkpoint][resume]") {
    TempDir dir;
    const std::string path = dir.file("last.safetensors");
    VisionTransformer model(unusual_config(), 4);
    AdamW optimizer(split_weight_decay(model.named_parameters()), 1e-3, {0.9, 0.999}, 1e-8, 0.05);
    take_a_step(model, optimizer);
    TrainingState state = some_state();
    save_checkpoint(path, model, state, {{"lr", "0.001"}}, &optimizer);

    // Everything --resume needs, from the resume file alone.
    std::filesystem::remove(path);
    CHECK(has_resume_point(path));
    const Checkpoint resume = load_resume_point(path);
    CHECK(resume.path == optimizer_state_path(path));
    CHECK(resume.state.global_step == state.global_step);
    CHECK(resume.options == Metadata{{"lr", "0.001"}});
    const auto saved = optimizer.state_tensors();
    REQUIRE(resume.optimizer.size() == saved.size());
    for (size_t i = 0; i < saved.size(); ++i) {
        CHECK(resume.optimizer[i].first == saved[i].first);
        CHECK(same_bits(resume.optimizer[i].second, saved[i].second));
    }
    VisionTransformer copy(resume.config, 99);
    load_weights(copy, resume);
    const auto original = model.named_parameters(), restored = copy.named_parameters();
    for (size_t i = 0; i < original.size(); ++i) CHECK(same_bits(original[i].second, restored[i].second));

    // The layout of runs saved before: the weights file, and a state file of the optimizer
    // tensors and the global step only, which must be from the same save.
    save_checkpoint(path, model, state, {{"lr", "0.001"}});
    NamedTensors older;
    for (const auto& [name, t] : saved) older.tensors.emplace_back("optimizer." + name, t);
    older.metadata = {{"format", kCheckpointFormat}, {"state.global_step", std::to_string(state.global_step)}};
    save_safetensors(optimizer_state_path(path), older);
    const Checkpoint old_run = load_resume_point(path);
    CHECK(old_run.path == path);
    CHECK(old_run.optimizer.size() == saved.size());
    older.metadata["state.global_step"] = std::to_string(state.global_step + 1);
    save_safetensors(optimizer_state_path(path), older);
    require_error([&] { load_resume_point(path); }, {optimizer_state_path(path), "different saves"});

    TempDir empty;
    CHECK_FALSE(has_resume_point(empty.file("last.safetensors")));
}

// A 1.25 MB checkpoint whose metadata says dim 16384, MLP 65536, depth 64 would have `eval` build
// a 12 GB model: the file's tensors are checked against its config first, one parameter at a
// time, and the first difference is named.
TEST_CASE("checkpoint: metadata that does not describe the file's tensors is refused before any model is built",
          "[checkpoint][errors]") {
    TempDir dir;
    const std::string path = dir.file("last.safetensors");
    save_checkpoint(path, VisionTransformer(tiny_vit_config(), 1), TrainingState{}, {});
    const NamedTensors good = load_safetensors(path);
    auto with_metadata = [&](const Metadata& changes) {
        NamedTensors changed = good;
        for (const auto& [key, value] : changes) changed.metadata[key] = value;
        save_safetensors(path, changed);
        return path;
    };
    require_error(
        [&] {
            load_checkpoint(
                with_metadata({{"config.dim", "16384"}, {"config.mlp_dim", "65536"}, {"config.depth", "64"}}));
        },
        {"checkpoint " + path, "cls_token has shape [1, 1, 16] but the model expects [1, 1, 16384]"});
    // The first block matches; a trillion more are not listed, only the first one missing.
    require_error(
        [&] {
            load_checkpoint(with_metadata({{"config.depth", "999999999999"}}));
        },
        {"checkpoint " + path, "blocks.1.norm1.weight is missing"});
    require_error(
        [&] {
            load_checkpoint(with_metadata({{"config.heads", "3"}}));
        },
        {"checkpoint " + path, "dim 16 is not divisible by heads 3"});
    require_error(
        [&] {
            load_checkpoint(with_metadata({{"config.image_height", "60129542144"}}));
        },
        {"checkpoint " + path, "64-bit"});

    NamedTensors extra = good;
    extra.tensors.emplace_back("blocks.7.attn.qkv.weight", Tensor::zeros({1}));
    save_safetensors(path, extra);
    require_error([&] { load_checkpoint(path); }, {"checkpoint " + path, "unexpected tensor blocks.7.attn.qkv.weight"});
}

// NaN weights evaluated to "accuracy 10.00%, mean loss nan" with exit status 0.
TEST_CASE("checkpoint: weights holding NaN or infinity are refused naming the tensor and element",
          "[checkpoint][errors]") {
    TempDir dir;
    const std::string path = dir.file("last.safetensors");
    VisionTransformer model(tiny_vit_config(), 1);
    model.head->weight.data()[5] = std::numeric_limits<real>::quiet_NaN();
    save_checkpoint(path, model, TrainingState{}, {});
    require_error([&] { load_checkpoint(path); },
                  {"checkpoint " + path, "head.weight holds nan at element 5", "not finite"});

    model.head->weight.data()[5] = 0;
    save_checkpoint(path, model, TrainingState{}, {});
    Checkpoint c = load_checkpoint(path);
    for (auto& [name, t] : c.weights.tensors)
        if (name == "norm.bias") t.data()[0] = -std::numeric_limits<real>::infinity();
    require_error([&] { load_weights(model, c); }, {"norm.bias holds -inf at element 0"});
    CHECK(non_finite_element("x", Tensor::ones({3})).empty());
}

TEST_CASE("checkpoint: a failed save leaves no temporary or partial file", "[checkpoint][errors]") {
    TempDir dir;
    VisionTransformer model(tiny_vit_config(), 1);
    AdamW optimizer(split_weight_decay(model.named_parameters()));
    take_a_step(model, optimizer);

    // A directory that does not exist: nothing can be opened.
    require_error([&] { save_checkpoint(dir.file("missing/last.safetensors"), model, {}, {}, &optimizer); },
                  {"missing/last.state.safetensors"});
    CHECK_FALSE(std::filesystem::exists(dir.file("missing")));

    // The weights' name taken by a directory: the state file is written, the weights fail at
    // the rename, and the temporary file is removed. The state file alone is harmless: a
    // resume needs the weights file, and its global step must match.
    std::filesystem::create_directories(dir.file("taken/last.safetensors/inside"));
    require_error([&] { save_checkpoint(dir.file("taken/last.safetensors"), model, {}, {}, &optimizer); },
                  {"last.safetensors"});
    CHECK(files_ending_in(dir.file("taken"), ".tmp").empty());
}

TEST_CASE("checkpoint: pool and head are the metadata text cls/mean and linear/mlp, other text is refused",
          "[checkpoint][errors]") {
    ViTConfig c = tiny_vit_config();
    c.pool = Pool::Mean;
    c.head = Head::Mlp;
    Metadata fields = config_to_metadata(c);
    CHECK(fields.at("pool") == "mean");
    CHECK(fields.at("head") == "mlp");
    const ViTConfig back = config_from_metadata(fields, "ckpt");
    CHECK(back.pool == Pool::Mean);
    CHECK(back.head == Head::Mlp);
    CHECK(config_to_metadata(tiny_vit_config()).at("pool") == "cls");
    CHECK(config_to_metadata(tiny_vit_config()).at("head") == "linear");
    fields["pool"] = "max";
    require_error([&] { config_from_metadata(fields, "ckpt"); }, {"ckpt: config.pool 'max' is not cls, mean or seq"});
}

TEST_CASE("checkpoint: a config written before patch dropout and LSA existed reads them as off", "[checkpoint]") {
    ViTConfig c = tiny_vit_config();
    c.patch_dropout = static_cast<real>(0.5);
    c.lsa = true;
    Metadata fields = config_to_metadata(c);
    CHECK(config_from_metadata(fields, "ckpt").patch_dropout == static_cast<real>(0.5));
    CHECK(config_from_metadata(fields, "ckpt").lsa);
    // What 0.9.0 wrote: neither key.
    fields.erase("patch_dropout");
    fields.erase("lsa");
    const ViTConfig back = config_from_metadata(fields, "ckpt");
    CHECK(back.patch_dropout == 0);
    CHECK_FALSE(back.lsa);
    CHECK(back.dim == c.dim);
    // Any other field is required.
    fields.erase("dim");
    require_error([&] { config_from_metadata(fields, "ckpt"); }, {"ckpt", "config.dim"});
}
