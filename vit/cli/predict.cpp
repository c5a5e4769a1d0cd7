// `patchgrad predict`: what a trained checkpoint sees in your own pictures. Each picture
// (PNG or binary PPM, vit/pictures/image_file.h) is resized and centre-cropped to the
// model's input size, normalised as in training, and its five most probable classes are
// printed, as a table or as JSON.
//
//   patchgrad predict --checkpoint PATH [--json] IMAGE...
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "patchgrad/autograd/io/json.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/pictures/image_file.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/evaluation.h"

namespace patchgrad::cli {

namespace {

constexpr int64_t kTop = 5;

void print_help() {
    std::cout << "usage: patchgrad predict --checkpoint PATH [--json] IMAGE...\n"
                 "\n"
                 "Classifies your own pictures with a checkpoint written by 'patchgrad train' and prints the five\n"
                 "most probable classes of each, with their probabilities.\n"
                 "\n"
                 "Pictures are PNG (gray, gray + alpha, RGB, RGBA or palette, 1 to 16 bits; not interlaced) or\n"
                 "binary PPM/PGM (P6/P5, maxval up to 255), of any size. Each is scaled so that its shorter side\n"
                 "fits the model's input (32x32 for the CIFAR-10 configs; antialiased bilinear), centre-cropped to\n"
                 "it, with any transparency over white, and normalised with the CIFAR-10 statistics training used.\n"
                 "\n"
                 "  --checkpoint PATH   the checkpoint; the model is rebuilt from its metadata\n"
                 "  --json              print one JSON object (the checkpoint and, per image, its classes or error)\n"
                 "  -h, --help          show this help\n"
                 "\n"
                 "A picture that cannot be read gets one line saying why; the others are still classified, and the\n"
                 "exit status is then 1.\n";
}

std::string percent(double p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%6.2f%%", 100 * p);
    return buf;
}

std::string json_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    return buf;
}

// What one picture gave: its size and classes, or why it could not be read.
struct Result {
    std::string file, error;
    Picture picture;
    std::vector<ClassProbability> classes;
};

}  // namespace

int predict_command(const std::vector<std::string>& args) {
    // The flags, and every other argument is a picture.
    std::vector<std::string> flag_args, files;
    bool json = false;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--json") {
            json = true;
        } else if (args[i].size() > 1 && args[i][0] == '-') {
            flag_args.push_back(args[i]);
            if (args[i] == "--checkpoint" && i + 1 < args.size()) flag_args.push_back(args[++i]);
        } else {
            files.push_back(args[i]);
        }
    }
    const Flags flags = parse_flags(flag_args, {"--checkpoint"});
    if (flags.help) {
        print_help();
        return 0;
    }
    if (!flags.given("--checkpoint")) throw UsageError("--checkpoint PATH is required");
    if (files.empty()) throw UsageError("give at least one IMAGE (a PNG or PPM file)");

    const Checkpoint checkpoint = load_checkpoint(flags.values.at("--checkpoint"));
    const ViTConfig& config = checkpoint.config;
    VisionTransformer model(config, 0);
    load_weights(model, checkpoint);
    std::vector<std::string> class_names;
    for (int64_t k = 0; k < config.num_classes; ++k)
        class_names.push_back(config.num_classes == 10 ? kCifar10ClassNames[size_t(k)] : "class " + std::to_string(k));

    std::vector<Result> results;
    for (const std::string& file : files) {
        Result r;
        r.file = file;
        try {
            r.picture = read_picture(file);
            const ImageSet image =
                picture_to_image_set(r.picture, config.channels, config.image_height, config.image_width, file);
            r.classes = top_classes(model, image, ChannelStats::cifar10_for(config.channels), kTop).front();
        } catch (const std::exception& e) {
            r.error = e.what();
            if (!json) std::cerr << "patchgrad predict: " << r.error << "\n";
        }
        r.picture.pixels = {};
        if (!json && r.error.empty()) {
            std::cout << file << " (" << r.picture.width << "x" << r.picture.height << ")\n";
            for (const ClassProbability& c : r.classes)
                std::cout << "  " << percent(c.probability) << "  " << class_names[size_t(c.label)] << "\n";
        }
        results.push_back(std::move(r));
    }

    bool failed = false;
    if (json) std::cout << "{\n  \"checkpoint\": " << json_string(checkpoint.path) << ",\n  \"images\": [";
    for (size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        failed = failed || !r.error.empty();
        if (!json) continue;
        std::cout << (i == 0 ? "\n" : ",\n") << "    {\"file\": " << json_string(r.file);
        if (!r.error.empty()) {
            std::cout << ", \"error\": " << json_string(r.error) << "}";
            continue;
        }
        std::cout << ", \"width\": " << r.picture.width << ", \"height\": " << r.picture.height << ", \"top\": [";
        for (size_t k = 0; k < r.classes.size(); ++k)
            std::cout << (k == 0 ? "" : ", ") << "{\"class\": " << json_string(class_names[size_t(r.classes[k].label)])
                      << ", \"probability\": " << json_number(r.classes[k].probability) << "}";
        std::cout << "]}";
    }
    if (json) std::cout << "\n  ]\n}\n";
    return failed ? 1 : 0;
}

}  // namespace patchgrad::cli
