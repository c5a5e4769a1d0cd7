// Tests for vit/cli/predict.cpp and the --image-file option of vit/cli/inspect.cpp, end to
// end on a tiny checkpoint: the commands are called as main() calls them, their output
// captured.
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "cli_test_util.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/pictures/png.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "test_util.h"
#include "vit/trainer_test_util.h"

namespace patchgrad::cli {
namespace {

using namespace patchgrad::test;

// A checkpoint of an untrained tiny ViT (32x32 input, 10 classes) and three files: a
// 48x40 RGB PNG, a 20x30 PPM and a file that is neither.
struct Files {
    TempDir dir;
    std::string checkpoint = dir.file("tiny.safetensors"), png = dir.file("photo.png"), ppm = dir.file("photo.ppm"),
                bad = dir.file("notes.txt");
    Files() {
        VisionTransformer model(tiny_vit_config(), 3);
        save_checkpoint(checkpoint, model, TrainingState{}, {});
        std::vector<uint8_t> pixels(48 * 40 * 3);
        for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 13 % 256);
        write_png(png, 48, 40, 3, pixels);
        write_bytes(ppm, "P6 20 30 255\n" + std::string(20 * 30 * 3, '\x60'));
        write_bytes(bad, "not a picture");
    }
};

int count(const std::string& text, const std::string& part) {
    int n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

TEST_CASE("predict: the top 5 classes of each picture, one line for a bad file, exit 1", "[cli][predict]") {
    Files f;
    Captured c;
    const int status = predict_command({"--checkpoint", f.checkpoint, f.png, f.bad, f.ppm});
    const std::string out = c.out.str(), err = c.err.str();
    INFO(out << err);
    CHECK(status == 1);
    CHECK(out.find(f.png + " (48x40)\n") != std::string::npos);
    CHECK(out.find(f.ppm + " (20x30)\n") != std::string::npos);
    CHECK(count(out, "%  ") == 10);  // 5 classes per good picture
    CHECK(err == "patchgrad predict: " + f.bad + ": not a PNG or binary PPM (P6/P5) file\n");
    Captured quiet;
    CHECK(predict_command({"--checkpoint", f.checkpoint, f.png}) == 0);
}

TEST_CASE("predict: --json is one object with every picture's classes or error", "[cli][predict]") {
    Files f;
    Captured c;
    CHECK(predict_command({f.png, "--json", f.bad, "--checkpoint=" + f.checkpoint}) == 1);
    const std::string out = c.out.str();
    INFO(out);
    CHECK(c.err.str().empty());
    CHECK(out.rfind("{\n  \"checkpoint\": \"" + f.checkpoint + "\",\n  \"images\": [\n    {\"file\": \"" + f.png +
                        "\", \"width\": 48, \"height\": 40, \"top\": [{\"class\": \"",
                    0) == 0);
    CHECK(out.find("{\"file\": \"" + f.bad + "\", \"error\": \"" + f.bad + ": not a PNG") != std::string::npos);
    CHECK(count(out, "\"probability\": 0.") == 5);
    CHECK(count(out, "{") == count(out, "}"));
    CHECK(count(out, "[") == count(out, "]"));
    CHECK(out.substr(out.size() - 7) == "\n  ]\n}\n");
}

// A picture whose name is not UTF-8 made output that Python's json refuses.
TEST_CASE("predict: --json is valid UTF-8 whatever bytes a file name holds", "[cli][predict]") {
    Files f;
    Captured c;
    const std::string odd = f.dir.file("bad\xff\xfeutf.png");  // Latin-1 bytes: no file of that name is needed
    CHECK(predict_command({"--json", "--checkpoint", f.checkpoint, f.png, odd}) == 1);
    const std::string out = c.out.str();
    INFO(out);
    CHECK(is_strict_utf8(out));
    CHECK(count(out, "bad\xEF\xBF\xBD\xEF\xBF\xBDutf.png") == 2);  // the file, and in its error
    CHECK(count(out, "\"probability\": 0.") == 5);
}

// predict /proc/self/mem printed "basic_filebuf::underflow error reading the file:
// Input/output error" without the file's name.
TEST_CASE("predict: a file that fails to read is named with the reason", "[cli][predict][errors]") {
    if (!std::filesystem::exists("/proc/self/mem")) return;  // Linux's: a file whose reading fails
    Files f;
    Captured c;
    CHECK(predict_command({"--checkpoint", f.checkpoint, "/proc/self/mem", f.png}) == 1);
    CHECK(c.err.str() == "patchgrad predict: /proc/self/mem: reading it failed: Input/output error\n");
    CHECK(count(c.out.str(), "%  ") == 5);  // the other picture is classified
}

// A one-channel checkpoint failed with "3 means and 3 stds for images of 1 channels".
TEST_CASE("predict and inspect: a gray model classifies and draws pictures as gray", "[cli][predict][inspect]") {
    Files f;
    ViTConfig gray = tiny_vit_config();
    gray.channels = 1;
    const std::string checkpoint = f.dir.file("gray.safetensors");
    save_checkpoint(checkpoint, VisionTransformer(gray, 5), TrainingState{}, {});
    Captured c;
    CHECK(predict_command({"--checkpoint", checkpoint, f.png, f.ppm}) == 0);
    CHECK(count(c.out.str(), "%  ") == 10);
    CHECK(inspect_command({"--checkpoint", checkpoint, "--image-file", f.png, "--out", f.dir.file("gray")}) == 0);
    CHECK(std::filesystem::is_regular_file(f.dir.file("gray/attention.png")));
    const ChannelStats stats = ChannelStats::cifar10_for(1);
    CHECK(stats.mean[0] == Approx(0.4809).margin(5e-5));
    CHECK(stats.std[0] == Approx(0.2466).margin(5e-5));
}

TEST_CASE("predict: usage errors", "[cli][predict][errors]") {
    Files f;
    require_error([&] { predict_command({f.png}); }, {"--checkpoint PATH is required"});
    require_error([&] { predict_command({"--checkpoint", f.checkpoint}); }, {"at least one IMAGE"});
    require_error(
        [&] {
            predict_command({"--checkpoint", f.checkpoint, "--top", "3", f.png});
        },
        {"unknown option '--top'"});
    Captured c;
    CHECK(predict_command({"--help"}) == 0);
    CHECK(c.out.str().rfind("usage: patchgrad predict --checkpoint PATH [--json] IMAGE...", 0) == 0);
}

TEST_CASE("inspect: --image-file draws the pictures for your own file", "[cli][inspect]") {
    Files f;
    const std::string out_dir = f.dir.file("pics");
    {
        Captured c;
        CHECK(inspect_command({"--checkpoint", f.checkpoint, "--image-file", f.ppm, "--out", out_dir}) == 0);
        CHECK(c.out.str().find("data: " + f.ppm + " (20x30), resized to 32x32, 1 image\n") != std::string::npos);
    }
    for (const char* name :
         {"patches.png", "pos_similarity.png", "attention.png", "attention_distance.png", "embedding_filters.png"})
        CHECK(std::filesystem::is_regular_file(std::filesystem::path(out_dir) / name));
    require_error(
        [&] {
            inspect_command({"--checkpoint", f.checkpoint, "--image-file", f.ppm, "--image", "3", "--out", out_dir});
        },
        {"--image-file PICTURE draws that picture", "not both"});
    require_error(
        [&] {
            inspect_command({"--checkpoint", f.checkpoint, "--image-file", f.bad, "--out", out_dir});
        },
        {f.bad, "not a PNG"});
}

}  // namespace
}  // namespace patchgrad::cli
