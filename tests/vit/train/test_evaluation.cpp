// test_evaluation.cpp — evaluate and format_evaluation (vit/train/evaluation.h) on a tiny ViT:
// the accuracy, loss and confusion matrix agree with the logits; broken models are named.
#include <limits>
#include <sstream>

#include "test_util.h"
#include "vit/trainer_test_util.h"

using namespace patchgrad;
using namespace patchgrad::test;

TEST_CASE("evaluate: accuracy, confusion matrix and per-class accuracy agree with the logits",
          "[trainer][evaluation]") {
    Rng rng(3);
    VisionTransformer model(tiny_vit_config(), 5);
    const ImageSet set = synthetic_cifar10(23, 2);
    model.train();
    const Evaluation e = evaluate(model, set, ChannelStats::cifar10(), 5);
    CHECK(model.training());  // the mode is restored

    model.eval();
    NoGradGuard no_grad;
    const Tensor logits = model.forward(to_tensor(set, ChannelStats::cifar10()));
    int64_t correct = 0;
    std::vector<int64_t> confusion(100, 0);
    for (int64_t i = 0; i < set.size(); ++i) {
        int64_t best = 0;
        for (int64_t k = 1; k < 10; ++k)
            if (logits.at({i, k}) > logits.at({i, best})) best = k;
        ++confusion[set.labels[i] * 10 + best];
        correct += best == set.labels[i];
    }
    CHECK(e.images == 23);
    CHECK(e.confusion == confusion);
    CHECK(e.accuracy == Approx(double(correct) / 23));
    CHECK(e.loss == Approx(double(cross_entropy(logits, set.labels).item())));
    const std::vector<double> per_class = e.class_accuracy();
    REQUIRE(per_class.size() == 10);
    CHECK(per_class[0] == Approx(double(confusion[0]) / 3));  // labels cycle: class 0 has 3 of 23 images

    const std::string text = format_evaluation(e);
    for (const char* name : {"airplane", "automobile", "truck", "confusion matrix", "autom"})
        CHECK(text.find(name) != std::string::npos);
    // Every row of the matrix is as wide as its header.
    std::istringstream lines(text.substr(text.find("confusion matrix")));
    std::string line, header;
    std::getline(lines, line);
    std::getline(lines, header);
    for (int k = 0; k < 10; ++k) {
        REQUIRE(std::getline(lines, line));
        CHECK(line.size() == header.size());
    }

    require_error([&] { evaluate(model, synthetic_cifar10(4, 1), ChannelStats::cifar10(), 0); }, {"Batcher"});
    // NaN weights evaluated to "accuracy 10.00%, mean loss nan" as if that were a result.
    VisionTransformer broken(tiny_vit_config(), 5);
    broken.blocks->layers[0]->mlp->fc2->bias.data()[3] = std::numeric_limits<real>::quiet_NaN();
    require_error([&] { evaluate(broken, set, ChannelStats::cifar10(), 8); },
                  {"evaluate", "mean loss is nan", "blocks.0.mlp.fc2.bias holds nan at element 3"});
    VisionTransformer other(vit_config("cifar-tiny"), 0);
    ImageSet wrong = set;
    wrong.class_names.resize(5);
    require_error([&] { evaluate(other, wrong, ChannelStats::cifar10(), 8); }, {"evaluate", "5 classes"});
}

TEST_CASE("evaluate: --tta flip averages the logits of each image and its mirror image", "[trainer][evaluation]") {
    VisionTransformer model(tiny_vit_config(), 6);
    const ImageSet set = synthetic_cifar10(13, 4);
    const Evaluation e = evaluate(model, set, ChannelStats::cifar10(), 5, TestTimeAugment::Flip);

    // The mirror image built pixel by pixel here, not with flip_horizontal.
    ImageSet mirrored = set;
    for (int64_t i = 0; i < set.size(); ++i)
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t y = 0; y < 32; ++y)
                for (int64_t x = 0; x < 32; ++x)
                    mirrored.pixels[((i * 3 + c) * 32 + y) * 32 + x] = set.pixels[((i * 3 + c) * 32 + y) * 32 + 31 - x];
    model.eval();
    NoGradGuard no_grad;
    const Tensor plain = model.forward(to_tensor(set, ChannelStats::cifar10()));
    const Tensor logits = (plain + model.forward(to_tensor(mirrored, ChannelStats::cifar10()))) * real(0.5);
    int64_t correct = 0;
    for (int64_t i = 0; i < set.size(); ++i) correct += argmax(logits.data() + i * 10, 10) == set.labels[i];
    CHECK(e.accuracy == Approx(double(correct) / 13));
    CHECK(e.loss == Approx(double(cross_entropy(logits, set.labels).item())).epsilon(1e-12));
    CHECK(std::abs(e.loss - double(cross_entropy(plain, set.labels).item())) > 1e-6);  // the flips change it
    CHECK(enum_name(TestTimeAugment::Flip) == "flip");
    CHECK(parse_enum<TestTimeAugment>("none", "--tta") == TestTimeAugment::None);
    require_error([] { parse_enum<TestTimeAugment>("crop", "--tta"); }, {"--tta", "crop", "none", "flip"});
}
