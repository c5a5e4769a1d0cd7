// `patchgrad summary`: the layers, output shapes and parameter counts of a named ViT
// configuration (vit/summary.h), without building the model.
#include <algorithm>
#include <iostream>
#include <utility>

#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/vision_transformer.h"

namespace patchgrad::cli {

namespace {

void print_help() {
    std::cout << "usage: patchgrad summary --config NAME [--classes N] [--image-size H[xW]]\n"
                 "\n"
                 "Prints a torchsummary-style table of a Vision Transformer: every layer with its output\n"
                 "shape for one image and its parameter count, and the total. The table is computed from\n"
                 "the configuration, so even vit-h14 needs no weights in memory.\n"
                 "\n"
                 "  --config NAME       one of:";
    for (const std::string& name : vit_config_names()) std::cout << " " << name;
    std::cout << "\n"
                 "  --classes N         number of classes (default: the configuration's)\n"
                 "  --image-size H[xW]  image size, square if W is left out (default: the configuration's)\n"
                 "  -h, --help          show this help\n";
}

// "224" -> 224 x 224, "224x160" -> 224 x 160
std::pair<int64_t, int64_t> parse_image_size(const std::string& text) {
    const size_t x = text.find('x');
    if (x == std::string::npos) {
        const int64_t side = parse_positive_int("--image-size", text);
        return {side, side};
    }
    try {
        return {parse_positive_int("--image-size", text.substr(0, x)),
                parse_positive_int("--image-size", text.substr(x + 1))};
    } catch (const UsageError&) {
        fail<UsageError>("--image-size needs H or HxW with positive integers, got '", text, "'");
    }
}

}  // namespace

int summary_command(const std::vector<std::string>& args) {
    const Flags flags = parse_flags(args, {"--config", "--classes", "--image-size"});
    if (flags.help) {
        print_help();
        return 0;
    }
    if (!flags.given("--config")) throw UsageError("--config NAME is required");
    const std::string name = flags.values.at("--config");
    ViTConfig config = config_from_flag(name);
    if (flags.given("--classes")) config.num_classes = parse_positive_int("--classes", flags.values.at("--classes"));
    if (flags.given("--image-size")) {
        const auto [h, w] = parse_image_size(flags.values.at("--image-size"));
        config.image_height = h;
        config.image_width = w;
    }
    std::cout << summarize(config).table();
    return 0;
}

}  // namespace patchgrad::cli
