// Chapter 10: training on CIFAR-10. The data pipeline (the binary files, normalisation, the
// validation split, augmentation, mixup/cutmix), the three optimisers on a badly scaled toy
// problem, warmup + cosine, label smoothing, and then real runs of patchgrad's trainer on a
// tiny synthetic CIFAR-10 written to a temporary folder: AdamW, Adam, SGD, and AdamW with a
// learning rate far too high. Runs in float64, so every number printed is the same in every
// build. Writes augment.png, training_curves.png and optimizers.png into --out DIR.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "patchgrad/autograd/optim/lr_schedule.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/datasets/augment.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/datasets/mixup.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/datasets/split.h"
#include "patchgrad/vit/inspect.h"
#include "patchgrad/vit/pictures/canvas.h"
#include "patchgrad/vit/pictures/chart.h"
#include "patchgrad/vit/train/trainer.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;
namespace fs = std::filesystem;

namespace {

// An ImageSet of one image holding a normalised-to-[0, 1] tensor image [C, H, W] again as bytes.
ImageSet bytes_of(const Tensor& images, int64_t index) {
    ImageSet set;
    const int64_t n = images.numel() / images.size(0);
    for (int64_t k = 0; k < n; ++k) {
        const double v = std::round(255 * double(images.data()[index * n + k]));
        set.pixels.push_back(static_cast<uint8_t>(std::min(255.0, std::max(0.0, v))));
    }
    set.labels = {0};
    set.class_names = {"mixed"};
    return set;
}

Image tile(const ImageSet& set, int64_t index, const std::string& label) {
    const Image image = to_image(set, index);
    Image big = make_image(image.width * 3, image.height * 3);
    blit(big, image, 0, 0, 3);
    return vconcat({big, text_image(label)}, 4);
}

// A run of the trainer on the synthetic data, with its own output folder.
TrainResult run(const TrainOptions& base, OptimizerKind kind, double lr, const fs::path& tmp) {
    const std::string optimizer = enum_name(kind);
    TrainOptions o = base;
    o.optimizer = kind;
    o.lr = lr;
    o.min_lr = 0;
    o.out_dir = (tmp / ("run-" + optimizer + "-" + std::to_string(lr))).string();
    std::ostringstream quiet_out, quiet_log;  // the header names the temporary folder
    TrainOutput output;
    output.out = &quiet_out;
    output.log = &quiet_log;
    try {
        return train(o, output);
    } catch (const std::runtime_error& e) {  // a diverged run: report it, keep going
        std::printf("%s at lr %g: %s\n", optimizer.c_str(), lr, e.what());
        return {};
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string out;
    try {
        out = tutorial::out_dir(argc, argv, "tutorial_10_training");
    } catch (const std::invalid_argument& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    fs::create_directories(out);
    const fs::path tmp =
        fs::temp_directory_path() /
        ("patchgrad-tutorial-10-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));

    // ---- 1. the CIFAR-10 files -----------------------------------------------------------
    std::printf("== 1. CIFAR-10 in its binary layout ==\n");
    // [snippet:write-synthetic]
    const fs::path data = tmp / "cifar-10-batches-bin";
    save_synthetic_cifar10(data.string(), 40, 0);  // six files of 40 images each
    const ImageSet all_train = load_cifar10_train(data.string());
    // [/snippet:write-synthetic]
    const auto bytes = fs::file_size(data / "data_batch_1.bin");
    std::printf("data_batch_1.bin: %lld bytes = %lld records of 1 + 3 * 1024 = %lld bytes\n",
                static_cast<long long>(bytes), static_cast<long long>(bytes / kCifar10RecordBytes),
                static_cast<long long>(kCifar10RecordBytes));
    std::printf("training set: %lld images [%lld, %lld, %lld], labels of the first five:",
                static_cast<long long>(all_train.size()), static_cast<long long>(all_train.channels),
                static_cast<long long>(all_train.height), static_cast<long long>(all_train.width));
    for (int64_t i = 0; i < 5; ++i)
        std::printf(" %lld (%s)", static_cast<long long>(all_train.labels[i]), kCifar10ClassNames[all_train.labels[i]]);
    std::printf("\n");

    // ---- 2. normalisation ----------------------------------------------------------------
    std::printf("\n== 2. Normalisation ==\n");
    const ChannelStats own = channel_stats(all_train), cifar = ChannelStats::cifar10();
    std::printf("synthetic set's own mean %.4f %.4f %.4f, std %.4f %.4f %.4f\n", own.mean[0], own.mean[1], own.mean[2],
                own.std[0], own.std[1], own.std[2]);
    std::printf("CIFAR-10's constants: mean %.4f %.4f %.4f, std %.4f %.4f %.4f\n", cifar.mean[0], cifar.mean[1],
                cifar.mean[2], cifar.std[0], cifar.std[1], cifar.std[2]);
    const Tensor x = to_tensor(all_train.subset({0}), cifar);
    std::printf("image 0, red pixel (0, 0): byte %d -> (%d / 255 - %.4f) / %.4f = %.4f\n", all_train.image(0)[0],
                all_train.image(0)[0], cifar.mean[0], cifar.std[0], double(x.data()[0]));

    // ---- 3. the validation split -----------------------------------------------------------
    std::printf("\n== 3. A validation split ==\n");
    const TrainValidationSplit split = split_validation(all_train, 50, 0);
    std::printf("%lld training + %lld validation images; validation images per class:",
                static_cast<long long>(split.train.size()), static_cast<long long>(split.validation.size()));
    for (int64_t c : split.validation.class_counts()) std::printf(" %lld", static_cast<long long>(c));
    std::printf("\n");

    // ---- 4. augmentation -------------------------------------------------------------------
    std::printf("\n== 4. Augmentation ==\n");
    ImageSet pair = all_train.subset({0, 3});  // an airplane (horizontal stripes) and a cat (vertical)
    std::vector<Image> tiles = {tile(pair, 0, "original")};
    Rng rng(7);
    {
        ImageSet one = pair.subset({0});
        const CropFlip drawn = random_crop_flip(one.view(0), rng);
        std::printf("crop-flip: window at (top %lld, left %lld) of the image padded by 4, flipped: %s\n",
                    static_cast<long long>(drawn.top), static_cast<long long>(drawn.left),
                    drawn.flipped ? "yes" : "no");
        tiles.push_back(tile(one, 0, "crop+flip"));
    }
    {
        ImageSet one = pair.subset({0});
        RandAugment ra = RandAugment::parse("rand-m9-n2");
        ra.prob = 1;  // always apply both operations, so the picture shows them
        ra.apply(one.view(0), rng);
        std::printf("RandAugment %s (p set to 1 for the picture)\n", ra.str().c_str());
        tiles.push_back(tile(one, 0, "RandAugment"));
    }
    {
        ImageSet one = pair.subset({0});
        RandomErasing erasing;
        erasing.prob = 1;
        const Box box = erasing.apply(one.view(0), rng);
        std::printf("random erasing: a %lld x %lld box at (%lld, %lld)\n", static_cast<long long>(box.height),
                    static_cast<long long>(box.width), static_cast<long long>(box.top),
                    static_cast<long long>(box.left));
        tiles.push_back(tile(one, 0, "erasing"));
    }
    {
        const ChannelStats unit{{0, 0, 0}, {1, 1, 1}};  // v / 255: mixing is the same before normalising
        const Tensor images = to_tensor(pair, unit);
        const MixedBatch mixed = mixup_batch(images, pair.labels, 0.7);
        const MixedBatch cut = cutmix_batch(images, pair.labels, Box{8, 8, 16, 16});
        std::printf("mixup lambda %.2f: loss = %.2f CE(label %lld) + %.2f CE(label %lld)\n", mixed.lambda, mixed.lambda,
                    static_cast<long long>(mixed.labels_a[0]), 1 - mixed.lambda,
                    static_cast<long long>(mixed.labels_b[0]));
        std::printf("cutmix box 16 x 16: lambda = 1 - 256 / 1024 = %.2f\n", cut.lambda);
        tiles.push_back(tile(bytes_of(mixed.images, 0), 0, "mixup 0.7"));
        tiles.push_back(tile(bytes_of(cut.images, 0), 0, "cutmix"));
    }
    Image strip = hconcat(tiles, 8);
    save(pad(strip, 8), (fs::path(out) / "augment.png").string());

    // ---- 5. three optimisers on a badly scaled bowl ------------------------------------------
    // f(w) = 1/2 sum_i c_i (w_i - 1)^2 with curvatures 100, 1 and 0.01: the gradient of one
    // coordinate is 10,000 times that of another.
    std::printf("\n== 5. SGD, Adam and AdamW on f(w) = 1/2 sum c_i (w_i - 1)^2, c = 100, 1, 0.01 ==\n");
    std::printf("%-28s %10s %10s %10s\n", "optimizer (100 steps)", "w_0", "w_1", "w_2");
    const std::vector<real> curvature = {100, 1, 0.01};
    auto descend = [&](const std::string& name, auto make) {
        // [snippet:toy-loop]
        Tensor w = Tensor::zeros({3}, true);
        auto optimizer = make(w);
        for (int step = 0; step < 100; ++step) {
            Tensor error = w - Tensor::ones({3});
            Tensor loss = sum(Tensor::from_vector({3}, curvature) * error * error) * real(0.5);
            loss.backward();
            optimizer.step();
            optimizer.zero_grad();
        }
        // [/snippet:toy-loop]
        std::printf("%-28s %10.4f %10.4f %10.4f\n", name.c_str(), double(w.data()[0]), double(w.data()[1]),
                    double(w.data()[2]));
    };
    descend("SGD lr 0.019", [](Tensor& w) { return SGD({w}, 0.019); });
    descend("SGD lr 0.019, momentum 0.9", [](Tensor& w) { return SGD({w}, 0.019, 0.9); });
    descend("Adam lr 0.05", [](Tensor& w) { return Adam({w}, 0.05); });
    descend("Adam lr 0.05, wd 0.5", [](Tensor& w) { return Adam({w}, 0.05, {0.9, 0.999}, 1e-8, 0.5); });
    descend("AdamW lr 0.05, wd 0.5", [](Tensor& w) { return AdamW({w}, 0.05, {0.9, 0.999}, 1e-8, 0.5); });

    // ---- 6. which parameters decay ---------------------------------------------------------------
    std::printf("\n== 6. Weight decay on the matrices only ==\n");
    ViTConfig config = vit_config("cifar-tiny");
    config.name = "tutorial-tiny";
    config.patch_size = 8;
    config.dim = 32;
    config.depth = 2;
    config.heads = 2;
    config.mlp_dim = 64;
    const VisionTransformer model(config, 0);
    const std::vector<ParamGroup> groups = split_weight_decay(model.named_parameters());
    int64_t decayed = 0, exempt = 0;
    for (const Tensor& p : groups[0].params) decayed += p.numel();
    for (const Tensor& p : groups[1].params) exempt += p.numel();
    std::printf("%s: %lld parameters\n", describe(config).c_str(), static_cast<long long>(model.num_parameters()));
    std::printf("decay group: %zu tensors, %lld numbers; no-decay group: %zu tensors, %lld numbers\n",
                groups[0].params.size(), static_cast<long long>(decayed), groups[1].params.size(),
                static_cast<long long>(exempt));

    // ---- 7. warmup and cosine ----------------------------------------------------------------------
    std::printf("\n== 7. Warmup + cosine: base lr 0.002, 6 steps per epoch, 5 epochs, warmup 1 epoch ==\n");
    LRSchedule schedule;
    schedule.base_lr = 2e-3;
    schedule.warmup = 6;
    schedule.total = 30;
    schedule.validate();
    std::printf("step:");
    for (int64_t s : {0, 2, 5, 6, 12, 18, 24, 29}) std::printf(" %8lld", static_cast<long long>(s));
    std::printf("\nlr:  ");
    for (int64_t s : {0, 2, 5, 6, 12, 18, 24, 29}) std::printf(" %8.6f", schedule.lr_at(s));
    std::printf("\n");

    // ---- 8. label smoothing --------------------------------------------------------------------------
    std::printf("\n== 8. Label smoothing (K = 4 classes, label 0) ==\n");
    std::printf("%-22s %12s %12s\n", "logits", "CE", "CE, s = 0.1");
    for (const std::vector<real>& z : {std::vector<real>{2, 0, 0, 0}, {5, 0, 0, 0}, {10, 0, 0, 0}, {20, 0, 0, 0}}) {
        const Tensor logits = Tensor::from_vector({1, 4}, z);
        std::printf("%-22s %12.6f %12.6f\n", ("[" + std::to_string(int(z[0])) + ", 0, 0, 0]").c_str(),
                    double(cross_entropy(logits, {0}).item()), double(cross_entropy(logits, {0}, real(0.1)).item()));
    }

    // ---- 9. training ---------------------------------------------------------------------------------
    std::printf("\n== 9. Training %s on the synthetic data ==\n", config.name.c_str());
    // [snippet:train-options]
    TrainOptions options;
    options.config = config;
    options.data_dir = data.string();
    options.data_source = "--data";
    options.validation = 50;  // 5 per class, out of the 200 training images
    options.epochs = 5;
    options.batch = 25;  // 6 steps per epoch
    options.weight_decay = 0.05;
    options.momentum = 0.9;  // SGD only
    options.warmup_epochs = 1;
    options.label_smoothing = 0.1;
    options.augment = AugmentKind::CropFlip;
    options.threads = 1;
    // [/snippet:train-options]
    const TrainResult adamw = run(options, OptimizerKind::AdamW, 2e-3, tmp);
    std::printf("AdamW, lr 0.002:\n");
    std::printf("%5s %5s %9s %10s %9s %9s %9s\n", "epoch", "step", "lr", "train loss", "train acc", "val loss",
                "val acc");
    for (const EpochRecord& r : adamw.history)
        std::printf("%5lld %5lld %9.6f %10.4f %8.1f%% %9.4f %8.1f%%\n", static_cast<long long>(r.epoch),
                    static_cast<long long>(r.step), r.lr, r.train_loss, 100 * r.train_acc, r.eval_loss,
                    100 * r.eval_acc);
    std::printf("test accuracy %.1f%% on %lld images\n", 100 * adamw.test->accuracy,
                static_cast<long long>(adamw.test->images));

    const TrainResult adam = run(options, OptimizerKind::Adam, 2e-3, tmp);
    const TrainResult sgd = run(options, OptimizerKind::Sgd, 0.05, tmp);
    const TrainResult too_high = run(options, OptimizerKind::AdamW, 0.5, tmp);
    std::printf("\nvalidation accuracy per epoch:\n%-18s", "run");
    for (int e = 1; e <= options.epochs; ++e) std::printf(" %6d", e);
    std::printf("\n");
    for (const auto& [name, result] : {std::pair<const char*, const TrainResult*>{"AdamW lr 0.002", &adamw},
                                       {"Adam lr 0.002", &adam},
                                       {"SGD lr 0.05", &sgd},
                                       {"AdamW lr 0.5", &too_high}}) {
        std::printf("%-18s", name);
        for (const EpochRecord& r : result->history) std::printf(" %5.1f%%", 100 * r.eval_acc);
        std::printf("\n");
    }

    const int w = 340, h = 230;
    save(hconcat({line_chart("loss (AdamW, lr 0.002)", "epoch", "cross-entropy",
                             {epoch_series("train", adamw.history, &EpochRecord::train_loss, 1),
                              epoch_series("validation", adamw.history, &EpochRecord::eval_loss, 1)},
                             w, h),
                  line_chart("accuracy (AdamW, lr 0.002)", "epoch", "accuracy (%)",
                             {epoch_series("train", adamw.history, &EpochRecord::train_acc, 100),
                              epoch_series("validation", adamw.history, &EpochRecord::eval_acc, 100)},
                             w, h)},
                 16),
         (fs::path(out) / "training_curves.png").string());
    save(line_chart("validation accuracy by optimizer", "epoch", "accuracy (%)",
                    {epoch_series("AdamW 0.002", adamw.history, &EpochRecord::eval_acc, 100),
                     epoch_series("Adam 0.002", adam.history, &EpochRecord::eval_acc, 100),
                     epoch_series("SGD 0.05", sgd.history, &EpochRecord::eval_acc, 100),
                     epoch_series("AdamW 0.5", too_high.history, &EpochRecord::eval_acc, 100)},
                    420, 260),
         (fs::path(out) / "optimizers.png").string());
    std::printf("\nwrote augment.png, training_curves.png and optimizers.png to %s\n", out.c_str());
    fs::remove_all(tmp);
    return 0;
}
