// trainer_test_util.h — what the tests of the trainer and the checkpoints share: a ViT small
// enough to train in milliseconds in float64 and a tiny synthetic CIFAR-10 on disk.
#pragma once

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "datasets/datasets_test_util.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/vit/train/trainer.h"
#include "patchgrad/vit/vision_transformer.h"
#include "test_util.h"
#include "vit/metadata_mutator.h"

namespace patchgrad::test {

// 32x32 CIFAR images, patch 8 (16 patches), dim 16, depth 1, heads 2, MLP 32, 10 classes.
inline ViTConfig tiny_vit_config() {
    ViTConfig c = vit_config("cifar-tiny");
    c.name = "test-tiny";
    c.patch_size = 8;
    c.dim = 16;
    c.depth = 1;
    c.heads = 2;
    c.mlp_dim = 32;
    return c;
}

// A synthetic CIFAR-10 in dir/data, 10 images per file (one of each class): 50 training
// images (40 after the validation split of 10) and 10 test images. Options for 2 epochs of 5
// steps (batch 8) that use every random part of the pipeline: augmentation, mixup/cutmix,
// dropout, drop path.
struct TinyRun {
    TempDir dir;
    TrainOptions options;

    TinyRun() {
        save_synthetic_cifar10(data_dir(), 10, 1);
        options.preset = "test";
        options.config = tiny_vit_config();
        options.config.drop_path = 0.1f;
        options.config.dropout = 0.1f;
        options.epochs = 2;
        options.batch = 8;
        options.optimizer = OptimizerKind::AdamW;
        options.lr = 1e-2;
        options.weight_decay = 0.05;
        options.warmup_epochs = 0.5;
        options.schedule = ScheduleKind::Cosine;
        options.min_lr = 1e-5;
        options.label_smoothing = 0.1;
        options.clip_grad = 1;
        options.augment = AugmentKind::CropFlip;
        options.rand_augment = "rand-m9-n2";
        options.erasing = 0.25;
        options.mixup = 0.8;
        options.cutmix = 1.0;
        options.validation = 10;
        options.seed = 7;
        options.data_dir = data_dir();
        options.out_dir = out("run");
        options.threads = 1;  // not auto: the tests that compare thread counts set their own
    }
    std::string data_dir() const { return dir.file("data"); }
    std::string out(const std::string& name) const { return dir.file(name); }
    // The options for `epochs` of learning alone: no drop path, dropout, augmentation or other
    // regularisation, so that the loss falls steadily.
    TrainOptions learning_only(int64_t epochs) const {
        TrainOptions o = options;
        o.epochs = epochs;
        o.config.drop_path = o.config.dropout = 0;
        o.augment = AugmentKind::None;
        o.rand_augment = "none";
        o.erasing = o.mixup = o.cutmix = o.label_smoothing = 0;
        return o;
    }
};

// train() with its printing captured rather than shown.
struct QuietTrain {
    std::ostringstream out, log;
    TrainResult operator()(const TrainOptions& options, std::function<bool()> stop = {}) {
        TrainOutput output;
        output.out = &out;
        output.log = &log;
        output.stop_requested = std::move(stop);
        return train(options, output);
    }
};

// The run of `options` cut into pieces: each stops after the global step in `stops` (by
// --max-steps; the last stop 0 runs to the end) and the next resumes it, with `between` run
// between pieces (to move a file away, say). Returns the last piece's result.
inline TrainResult train_in_sessions(QuietTrain& quiet, TrainOptions options, const std::vector<int64_t>& stops,
                                     const std::function<void()>& between = {}) {
    REQUIRE((!stops.empty() && stops.back() == 0));
    TrainResult result;
    for (size_t i = 0; i < stops.size(); ++i) {
        if (i > 0 && between) between();
        options.max_steps = stops[i];
        options.resume = i > 0;
        result = quiet(options);
        REQUIRE(result.stop == (stops[i] == 0 ? StopReason::Finished : StopReason::MaxSteps));
    }
    return result;
}

// Every tensor of two checkpoints' weights equal to the last bit.
inline void require_identical_weights(const std::string& path_a, const std::string& path_b) {
    const NamedTensors a = load_safetensors(path_a), b = load_safetensors(path_b);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) {
        INFO("tensor " << a.tensors[i].first);
        REQUIRE(a.tensors[i].first == b.tensors[i].first);
        const Tensor& x = a.tensors[i].second;
        const Tensor& y = b.tensors[i].second;
        REQUIRE(x.shape() == y.shape());
        CHECK(std::memcmp(x.data(), y.data(), sizeof(real) * static_cast<size_t>(x.numel())) == 0);
    }
}

// Every file in `dir` with its bytes.
inline std::map<std::string, std::string> files_in(const std::string& dir) {
    std::map<std::string, std::string> files;
    for (const std::string& name : files_ending_in(dir, "")) files[name] = read_bytes(dir + "/" + name);
    return files;
}

}  // namespace patchgrad::test
