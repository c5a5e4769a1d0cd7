// `patchgrad inspect`: pictures of what a ViT has learned (vit/inspect.h) — the patches of
// an image, the similarity of the position embeddings, the class token's attention and its
// rollout, the mean attention distance of every head, and the principal components of the
// patch embedding filters — for a trained checkpoint, or for a fresh model to compare with.
//
//   patchgrad inspect (--checkpoint PATH | --config NAME [--seed S])
//                     ([--image N] [--data DIR | --file FILE.bin] | --image-file PICTURE)
//                     --out DIR [--distance-images M] [--threads T]
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/inspect.h"
#include "patchgrad/vit/pictures/image_file.h"
#include "patchgrad/vit/train/checkpoint.h"

namespace patchgrad::cli {

namespace {

void print_help() {
    std::cout << "usage: patchgrad inspect (--checkpoint PATH | --config NAME [--seed S])\n"
                 "                         ([--image N] [--data DIR | --file FILE.bin] | --image-file PICTURE)\n"
                 "                         --out DIR [--distance-images M] [--threads T]\n"
                 "\n"
                 "Draws what a Vision Transformer has learned, as in the ViT paper's section 4.5, into DIR:\n"
                 "  patches.png             the image cut into patches, and the patches as the token sequence\n"
                 "  pos_similarity.png      cosine similarity between the patches' position embeddings (Fig. 7)\n"
                 "  attention.png           the class token's attention per head of the last layer, and the\n"
                 "                          attention rollout through all layers, over the image\n"
                 "  attention_distance.png  the mean attention distance of every head against depth (Fig. 7)\n"
                 "  embedding_filters.png   principal components of the patch embedding filters E (Fig. 7)\n"
                 "Run it on a checkpoint and on a fresh model of the same configuration to see what training did.\n"
                 "\n"
                 "  --checkpoint PATH     a checkpoint of 'patchgrad train'; the model is rebuilt from it\n"
                 "  --config NAME         a fresh, untrained model instead, one of:";
    for (const std::string& name : vit_config_names()) std::cout << " " << name;
    std::cout << "\n"
                 "  --seed S              the fresh model's initialisation seed (default: 0)\n"
                 "  --image N             the image to draw, 0-based (default: 0)\n"
                 "  --data DIR            images from DIR/test_batch.bin (default: $PATCHGRAD_DATA, else "
              << kDefaultDataDir
              << ")\n"
                 "  --file FILE.bin       images from any file of CIFAR-10 binary records instead\n"
                 "  --image-file PICTURE  draw your own picture (PNG or PPM), prepared as 'patchgrad predict' does;\n"
                 "                        the attention distance is then that picture's alone\n"
                 "  --out DIR             where the pictures go (created if needed); a file there of a\n"
                 "                        picture's name is replaced only if it is a PNG\n"
                 "  --distance-images M   average the attention distance over the first M images (default: 128)\n"
                 "  --threads T           threads, or auto (measured, as in train; default: 1)\n"
                 "  -h, --help            show this help\n";
}

}  // namespace

int inspect_command(const std::vector<std::string>& args) {
    const Flags flags = parse_flags(args, {"--checkpoint", "--config", "--seed", "--image", "--data", "--file",
                                           "--image-file", "--out", "--distance-images", "--threads"});
    if (flags.help) {
        print_help();
        return 0;
    }
    auto value = [&](const char* name) { return flags.values.at(name); };
    if (flags.given("--checkpoint") == flags.given("--config"))
        throw UsageError("give --checkpoint PATH (a trained model) or --config NAME (a fresh one), exactly one");
    if (flags.given("--seed") && !flags.given("--config"))
        throw UsageError("--seed is for a fresh model (--config NAME)");
    if (flags.given("--data") && flags.given("--file"))
        throw UsageError("give --data DIR or --file FILE.bin, not both");
    if (flags.given("--image-file") && (flags.given("--image") || flags.given("--data") || flags.given("--file")))
        throw UsageError(
            "--image-file PICTURE draws that picture; --image N, --data and --file pick a CIFAR-10 "
            "image instead: not both");
    if (!flags.given("--out")) throw UsageError("--out DIR is required");
    data_dir_from_flags(flags);            // an empty --data is refused before anything is loaded
    check_inspection_out(value("--out"));  // before the model is built
    InspectOptions options;
    if (flags.given("--image")) options.image = static_cast<int64_t>(parse_unsigned("--image", value("--image")));
    if (flags.given("--distance-images"))
        options.distance_images = parse_positive_int("--distance-images", value("--distance-images"));
    use_threads(parse_threads(flags.value_or("--threads", "1")));

    // The model is built last, once the cheap checks passed: the checkpoint's tensors against
    // its config (load_checkpoint), then the images against the model's input size.
    std::optional<Checkpoint> checkpoint;
    ViTConfig config;
    uint64_t seed = 0;
    if (flags.given("--checkpoint")) {
        checkpoint = load_checkpoint(value("--checkpoint"));
        config = checkpoint->config;
        const TrainingState& state = checkpoint->state;
        options.model_name = config.name + ", trained " + std::to_string(state.epoch) + " epochs" +
                             (state.step_in_epoch > 0 ? " and " + std::to_string(state.step_in_epoch) + " steps" : "") +
                             " (" + std::filesystem::path(checkpoint->path).filename().string() + ")";
    } else {
        seed = parse_unsigned("--seed", flags.value_or("--seed", "0"));
        config = config_from_flag(value("--config"));
        options.model_name = config.name + ", untrained (seed " + std::to_string(seed) + ")";
    }
    std::cout << "model: " << options.model_name << ": " << describe(config) << "\n";

    ImageSet set;
    if (flags.given("--image-file")) {
        const std::string file = value("--image-file");
        const Picture picture = read_picture(file);
        set = picture_to_image_set(picture, config.channels, config.image_height, config.image_width, file);
        options.image_name = std::filesystem::path(file).filename().string();
        std::cout << "data: " << file << " (" << picture.width << "x" << picture.height << "), resized to "
                  << config.image_width << "x" << config.image_height;
    } else if (flags.given("--file")) {
        set = load_cifar10_file(value("--file"), &std::cerr);
        std::cout << "data: " << value("--file");
    } else {
        const DataDir dir = data_dir_from_flags(flags);
        set = load_cifar10_test(dir.path, &std::cerr);
        std::cout << "data: " << kCifar10TestFile << " in " << dir.path << " (" << dir.source << ")";
    }
    std::cout << ", " << set.size() << (set.size() == 1 ? " image\n" : " images\n") << std::flush;
    check_inspection(config, set, options);
    VisionTransformer model(config, seed);
    if (checkpoint) load_weights(model, *checkpoint);

    const Inspection inspection =
        write_inspection(model, set, ChannelStats::cifar10_for(config.channels), value("--out"), options);
    const Matrix& d = inspection.attention_distance;
    std::cout << "mean attention distance (pixels; uniform attention: "
              << mean_patch_distance(PatchGrid::of(model.config)) << "), per layer, heads in order:\n";
    for (int64_t l = 0; l < d.rows; ++l) {
        std::cout << "  layer " << l + 1 << ":";
        for (int64_t h = 0; h < d.cols; ++h) std::cout << " " << d(l, h);
        std::cout << "\n";
    }
    std::cout << "embedding filters: the first principal components explain";
    for (size_t c = 0; c < std::min<size_t>(3, inspection.filters.explained.size()); ++c)
        std::cout << " " << 100 * inspection.filters.explained[c] << "%";
    std::cout << " of the variance\n";
    for (const std::string& file : inspection.files) std::cout << "wrote " << file << "\n";
    return 0;
}

}  // namespace patchgrad::cli
