// augment.cpp — random crop and flip, timm's RandAugment and RandomErasing on uint8 images.
#include "patchgrad/datasets/augment.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace patchgrad {

CropFlip random_crop_flip(ImageView img, Rng& rng, int64_t padding, double flip_prob) {
    check(padding >= 0 && flip_prob >= 0 && flip_prob <= 1, "random_crop_flip: padding ", padding,
          " and flip probability ", flip_prob, " must be >= 0 and in [0, 1]");
    // [snippet:crop-flip]
    CropFlip drawn;
    drawn.top = static_cast<int64_t>(rng.below(static_cast<uint64_t>(2 * padding + 1)));
    drawn.left = static_cast<int64_t>(rng.below(static_cast<uint64_t>(2 * padding + 1)));
    drawn.flipped = rng.uniform() < flip_prob;
    crop_padded(img, padding, drawn.top, drawn.left);
    if (drawn.flipped) flip_horizontal(img);
    return drawn;
    // [/snippet:crop-flip]
}

// ---- RandAugment ----------------------------------------------------------------------------

const char* rand_augment_op_name(RandAugmentOp op) {
    switch (op) {
        case RandAugmentOp::AutoContrast:
            return "AutoContrast";
        case RandAugmentOp::Equalize:
            return "Equalize";
        case RandAugmentOp::Invert:
            return "Invert";
        case RandAugmentOp::Rotate:
            return "Rotate";
        case RandAugmentOp::Posterize:
            return "Posterize";
        case RandAugmentOp::Solarize:
            return "Solarize";
        case RandAugmentOp::SolarizeAdd:
            return "SolarizeAdd";
        case RandAugmentOp::Color:
            return "Color";
        case RandAugmentOp::Contrast:
            return "Contrast";
        case RandAugmentOp::Brightness:
            return "Brightness";
        case RandAugmentOp::Sharpness:
            return "Sharpness";
        case RandAugmentOp::ShearX:
            return "ShearX";
        case RandAugmentOp::ShearY:
            return "ShearY";
        case RandAugmentOp::TranslateX:
            return "TranslateXRel";
        case RandAugmentOp::TranslateY:
            return "TranslateYRel";
    }
    return "unknown";
}

double rand_augment_level(RandAugmentOp op, double magnitude, bool increasing) {
    if (!(magnitude >= 0 && magnitude <= 10))  // the op's name only for the message
        fail("RandAugment: magnitude ", magnitude, " of ", rand_augment_op_name(op), " must be in [0, 10]");
    // timm writes every range as (level / _LEVEL_DENOM) * maximum, truncating with int()
    // where the argument is an integer; the same expressions give the same numbers.
    const double level = magnitude / 10.0;
    switch (op) {
        case RandAugmentOp::AutoContrast:
        case RandAugmentOp::Equalize:
        case RandAugmentOp::Invert:
            return 0;
        case RandAugmentOp::Rotate:
            return level * 30.0;
        case RandAugmentOp::ShearX:
        case RandAugmentOp::ShearY:
            return level * 0.3;
        case RandAugmentOp::TranslateX:
        case RandAugmentOp::TranslateY:
            return level * 0.45;
        case RandAugmentOp::Posterize: {
            const int bits = static_cast<int>(level * 4);
            return increasing ? 4 - bits : bits;
        }
        case RandAugmentOp::Solarize: {
            const int threshold = std::min(256, static_cast<int>(level * 256));
            return increasing ? 256 - threshold : threshold;
        }
        case RandAugmentOp::SolarizeAdd:
            return std::min(128, static_cast<int>(level * 110));
        case RandAugmentOp::Color:
        case RandAugmentOp::Contrast:
        case RandAugmentOp::Brightness:
        case RandAugmentOp::Sharpness:
            return increasing ? 1.0 + level * 0.9 : level * 1.8 + 0.1;
    }
    fail("RandAugment: unknown operation ", static_cast<int>(op));
}

void apply_rand_augment_op(ImageView img, RandAugmentOp op, double magnitude, bool increasing, uint8_t fill, Rng& rng) {
    const double level = rand_augment_level(op, magnitude, increasing);
    // timm's _randomly_negate: each signed argument is negated with probability 1/2.
    const auto random_sign = [&rng](double v) { return rng.uniform() < 0.5 ? -v : v; };
    const auto factor = [&]() { return increasing ? 1.0 + random_sign(level - 1.0) : level; };
    switch (op) {
        case RandAugmentOp::AutoContrast:
            auto_contrast(img);
            return;
        case RandAugmentOp::Equalize:
            equalize(img);
            return;
        case RandAugmentOp::Invert:
            invert(img);
            return;
        case RandAugmentOp::Rotate:
            rotate(img, random_sign(level), fill);
            return;
        case RandAugmentOp::Posterize:
            posterize(img, static_cast<int>(level));
            return;
        case RandAugmentOp::Solarize:
            solarize(img, static_cast<int>(level));
            return;
        case RandAugmentOp::SolarizeAdd:
            solarize_add(img, static_cast<int>(level), 128);
            return;
        case RandAugmentOp::Color:
            color(img, factor());
            return;
        case RandAugmentOp::Contrast:
            contrast(img, factor());
            return;
        case RandAugmentOp::Brightness:
            brightness(img, factor());
            return;
        case RandAugmentOp::Sharpness:
            sharpness(img, factor());
            return;
        case RandAugmentOp::ShearX:
            shear_x(img, random_sign(level), fill);
            return;
        case RandAugmentOp::ShearY:
            shear_y(img, random_sign(level), fill);
            return;
        case RandAugmentOp::TranslateX:
            translate_x(img, random_sign(level) * img.width, fill);
            return;
        case RandAugmentOp::TranslateY:
            translate_y(img, random_sign(level) * img.height, fill);
            return;
    }
}

RandAugment RandAugment::parse(const std::string& spec) {
    std::vector<std::string> parts;
    std::stringstream ss(spec);
    for (std::string part; std::getline(ss, part, '-');) parts.push_back(part);
    check(!parts.empty() && parts[0] == "rand", "RandAugment: '", spec, "' must start with 'rand-' (e.g. rand-m9-n2)");
    RandAugment ra;
    for (size_t i = 1; i < parts.size(); ++i) {
        const std::string& part = parts[i];
        const size_t digits = part.find_first_of("0123456789.");
        const std::string key = part.substr(0, digits);
        const std::string text = digits == std::string::npos ? "" : part.substr(digits);
        size_t used = 0;
        double value = 0;
        try {
            value = std::stod(text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        const bool known = key == "m" || key == "n" || key == "mstd" || key == "inc" || key == "p";
        check(known && !text.empty() && used == text.size(), "RandAugment: cannot read '", part, "' in '", spec,
              "'; expected m<magnitude>, n<ops>, mstd<std>, inc<0|1> or p<prob>");
        // Checked before the conversion to an integer, which a huge n would overflow.
        check(key != "n" || (value == std::floor(value) && value <= double(RandAugment::kMaxOps)), "RandAugment: '",
              part, "' in '", spec, "': the number of ops must be an integer from 0 to ", RandAugment::kMaxOps);
        if (key == "m") ra.magnitude = value;
        if (key == "n") ra.num_ops = static_cast<int64_t>(value);
        if (key == "mstd") ra.magnitude_std = value > 100 ? INFINITY : value;  // timm: > 100 means uniform
        if (key == "inc") ra.increasing = value != 0;
        if (key == "p") ra.prob = value;
    }
    ra.validate();
    return ra;
}

std::string RandAugment::str() const {
    std::ostringstream os;
    os << "rand-m" << magnitude << "-n" << num_ops << "-mstd" << (std::isinf(magnitude_std) ? 101 : magnitude_std)
       << "-inc" << (increasing ? 1 : 0) << "-p" << prob;
    return os.str();
}

void RandAugment::validate() const {
    if (num_ops < 0 || num_ops > kMaxOps || !(magnitude >= 0 && magnitude <= 10) || !(magnitude_std >= 0) ||
        !(prob >= 0 && prob <= 1))
        fail("RandAugment: ", str(), " needs n in [0, ", kMaxOps, "], m in [0, 10], mstd >= 0 and p in [0, 1]");
}

void RandAugment::apply(ImageView img, Rng& rng) const {
    validate();
    for (int64_t i = 0; i < num_ops; ++i) {
        const RandAugmentOp op = kRandAugmentOps[rng.below(kRandAugmentOps.size())];
        if (!(rng.uniform() < prob)) continue;
        double m = magnitude;
        if (std::isinf(magnitude_std))
            m = rng.uniform(0, magnitude);
        else if (magnitude_std > 0)
            m = magnitude + magnitude_std * rng.normal();
        apply_rand_augment_op(img, op, std::clamp(m, 0.0, 10.0), increasing, fill, rng);
    }
}

// ---- random erasing --------------------------------------------------------------------------

Box RandomErasing::apply(ImageView img, Rng& rng) const {
    check(prob >= 0 && prob <= 1 && min_area > 0 && min_area <= max_area && max_area <= 1 && min_aspect > 0 &&
              min_aspect <= 1,
          "RandomErasing: probability ", prob, ", area [", min_area, ", ", max_area, "], aspect ", min_aspect,
          "; expected p in [0, 1], 0 < min_area <= max_area <= 1, 0 < min_aspect <= 1");
    if (!(rng.uniform() < prob)) return {};
    const int64_t H = img.height, W = img.width;
    const double log_aspect = std::log(min_aspect);
    for (int attempt = 0; attempt < 10; ++attempt) {
        const double area = rng.uniform(min_area, max_area) * static_cast<double>(H * W);
        const double aspect = std::exp(rng.uniform(log_aspect, -log_aspect));
        const auto h = static_cast<int64_t>(std::round(std::sqrt(area * aspect)));
        const auto w = static_cast<int64_t>(std::round(std::sqrt(area / aspect)));
        if (w >= W || h >= H) continue;
        Box box;
        box.height = h;
        box.width = w;
        box.top = static_cast<int64_t>(rng.below(static_cast<uint64_t>(H - h + 1)));
        box.left = static_cast<int64_t>(rng.below(static_cast<uint64_t>(W - w + 1)));
        for (int64_t c = 0; c < img.channels; ++c) {
            const uint8_t colour = fill == Fill::RandomColor ? static_cast<uint8_t>(rng.next_u64() >> 56) : value;
            for (int64_t y = box.top; y < box.top + h; ++y)
                for (int64_t x = box.left; x < box.left + w; ++x)
                    img.at(c, y, x) = fill == Fill::PerPixel ? static_cast<uint8_t>(rng.next_u64() >> 56) : colour;
        }
        return box;
    }
    return {};
}

// ---- the pipeline ----------------------------------------------------------------------------

void Augmentation::apply(ImageSet& batch, Rng& rng) const {
    batch.check("Augmentation::apply");
    // [snippet:augmentation-apply]
    for (int64_t i = 0; i < batch.size(); ++i) {
        const ImageView img = batch.view(i);
        if (crop_flip) random_crop_flip(img, rng, padding, flip_prob);
        if (rand_augment) rand_augment->apply(img, rng);
        if (erasing) erasing->apply(img, rng);
    }
    // [/snippet:augmentation-apply]
}

}  // namespace patchgrad
