// checkpoint.cpp — writing and reading training checkpoints: the weights in timm's layout, the
// config, recipe and training position as metadata, the optimizer state beside them (see checkpoint.h).
#include "patchgrad/vit/train/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "patchgrad/autograd/version.h"
#include "patchgrad/layers/state_dict.h"

namespace patchgrad {

namespace {

const char* const kPatchWeight = "patch_embed.proj.weight";

// The one list of ViTConfig fields: written, read and compared through it, so a field
// cannot be saved but forgotten on load. `C` is ViTConfig or const ViTConfig.
template <class C, class F>
void for_each_config_field(C& c, F&& f) {
    f("name", c.name);
    f("image_height", c.image_height);
    f("image_width", c.image_width);
    f("channels", c.channels);
    f("patch_size", c.patch_size);
    f("dim", c.dim);
    f("depth", c.depth);
    f("heads", c.heads);
    f("mlp_dim", c.mlp_dim);
    f("mlp_ratio", c.mlp_ratio);
    f("num_classes", c.num_classes);
    f("pool", c.pool);
    f("head", c.head);
    f("dropout", c.dropout);
    f("emb_dropout", c.emb_dropout);
    f("attn_dropout", c.attn_dropout);
    f("drop_path", c.drop_path);
    f("patch_dropout", c.patch_dropout);
    f("qkv_bias", c.qkv_bias);
    f("lsa", c.lsa);
    f("learnable_pos_embed", c.learnable_pos_embed);
    f("gelu", c.gelu);
    f("layer_norm_eps", c.layer_norm_eps);
}

// The same for TrainingState.
template <class S, class F>
void for_each_state_field(S& s, F&& f) {
    f("epoch", s.epoch);
    f("step_in_epoch", s.step_in_epoch);
    f("global_step", s.global_step);
    for (size_t i = 0; i < s.dropout_rng.size(); ++i) f("dropout_rng." + std::to_string(i), s.dropout_rng[i]);
    f("loss_sum", s.loss_sum);
    f("correct", s.correct);
    f("seen", s.seen);
    f("best_accuracy", s.best_accuracy);
    f("elapsed_seconds", s.elapsed_seconds);
    f("epoch_seconds", s.epoch_seconds);
}

// The entries of `metadata` whose key starts with `prefix`, with the prefix removed.
Metadata with_prefix_removed(const Metadata& metadata, const std::string& prefix) {
    Metadata out;
    for (const auto& [key, value] : metadata)
        if (key.compare(0, prefix.size(), prefix) == 0) out[key.substr(prefix.size())] = value;
    return out;
}

Metadata state_to_metadata(const TrainingState& state) {
    Metadata out;
    for_each_state_field(state, [&](const std::string& key, const auto& value) { out[key] = metadata_text(value); });
    return out;
}

// The longest run a state may have taken: ten billion seconds (317 years).
constexpr double kMaxSeconds = 1e10;

// What a state must be whatever the run: counts not negative, sums finite and within their
// counts. The rest needs the recipe and the data (check_resume_state).
void check_state(const TrainingState& s, const std::string& where) {
    const auto refuse = [&where](const char* field, const std::string& value, const std::string& why) {
        fail(where, ": state.", field, " ", value, " ", why);
    };
    for (const auto& [field, value] : {std::pair{"epoch", s.epoch}, std::pair{"step_in_epoch", s.step_in_epoch},
                                       std::pair{"global_step", s.global_step}, std::pair{"seen", s.seen}})
        if (value < 0) refuse(field, std::to_string(value), "is negative");
    if (!(std::isfinite(s.loss_sum) && s.loss_sum >= 0))
        refuse("loss_sum", exact_text(s.loss_sum), "is not a sum of losses (finite, at least 0)");
    // (A mixed image counts lambda + (1 - lambda), which rounding may put an ulp above 1.)
    if (!(s.correct >= 0 && s.correct <= double(s.seen) * (1 + 1e-9)))
        refuse("correct", exact_text(s.correct), "is not a count from 0 to state.seen " + std::to_string(s.seen));
    if (!(s.best_accuracy == -1 || (s.best_accuracy >= 0 && s.best_accuracy <= 1)))
        refuse("best_accuracy", exact_text(s.best_accuracy), "is neither an accuracy from 0 to 1 nor -1 (none yet)");
    for (const auto& [field, value] :
         {std::pair{"elapsed_seconds", s.elapsed_seconds}, std::pair{"epoch_seconds", s.epoch_seconds}})
        if (!(value >= 0 && value <= kMaxSeconds)) refuse(field, exact_text(value), "is not a duration (0 to 1e10 s)");
}

TrainingState state_from_metadata(const Metadata& fields, const std::string& where) {
    TrainingState state;
    for_each_state_field(state, [&](const std::string& key, auto& value) {
        read_metadata_text(metadata_entry(fields, key, where, "state."), where, "state." + key, value);
    });
    check_state(state, where);
    return state;
}

// The shape `name` has in the file: timm's Conv2d [D, C, P, P] for the patch projection,
// the parameter's own shape otherwise.
Shape file_shape(const std::string& name, const Shape& shape, const ViTConfig& config) {
    if (name != kPatchWeight) return shape;
    return {config.dim, config.channels, config.patch_size, config.patch_size};
}

Tensor reshaped(const Tensor& t, const Shape& shape) {
    NoGradGuard no_grad;
    return reshape(t, shape);
}

// Compares a file's tensors with the parameters a model has, or would have, one parameter at
// a time (so a config asking for millions of blocks is refused at the first tensor the file
// lacks, long before a model of that size would be allocated).
class WeightChecker {
public:
    WeightChecker(const NamedTensors& weights, const ViTConfig& config, std::string where)
        : weights_(weights), config_(config), where_(std::move(where)) {
        for (size_t i = 0; i < weights.tensors.size(); ++i) index_[weights.tensors[i].first] = i;
    }

    // The file's tensor for the parameter `name` of shape `model_shape` (the model's layout);
    // throws naming it when the file has none or one of another shape.
    const Tensor& expect(const std::string& name, const Shape& model_shape) {
        const Shape expected = file_shape(name, model_shape, config_);
        const auto it = index_.find(name);
        check(it != index_.end(), where_, ": ", name, " is missing (the model expects shape ", expected, ")");
        const Tensor& t = weights_.tensors[it->second].second;
        check(t.shape() == expected, where_, ": ", name, " has shape ", t.shape(), " but the model expects ", expected);
        const std::string non_finite = non_finite_element(name, t);
        check(non_finite.empty(), where_, ": ", non_finite, ": the weights are not finite");
        seen_.insert(name);
        return t;
    }

    // Throws naming the first tensor of the file that no expect() asked for.
    void finish() const {
        for (const auto& [name, t] : weights_.tensors)
            check(seen_.count(name) > 0, where_, ": unexpected tensor ", name, ": the model has no such parameter");
    }

private:
    const NamedTensors& weights_;
    const ViTConfig& config_;
    const std::string where_;
    std::unordered_map<std::string, size_t> index_;  // tensor name -> position in the file
    std::unordered_set<std::string> seen_;
};

void check_format(const Metadata& metadata, const std::string& where) {
    const auto format = metadata.find("format");
    check(format != metadata.end(), where, ": not a patchgrad checkpoint (no 'format' in its metadata; expected ",
          kCheckpointFormat, ")");
    check(format->second == kCheckpointFormat, where, ": format '", format->second, "', expected ", kCheckpointFormat);
}

}  // namespace

// ---- metadata values ---------------------------------------------------------------------

namespace {

// The fewest significant digits, from `fewest` up to `most`, whose text reads back as `value`.
template <class T, class Read>
std::string shortest_text(T value, int fewest, int most, Read read) {
    char text[40];
    for (int digits = fewest; digits <= most; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, double(value));
        if (read(text) == value) break;
    }
    return text;
}

}  // namespace

std::string exact_text(double value) {
    return shortest_text(value, 15, 17, [](const char* text) { return std::strtod(text, nullptr); });
}

std::string exact_text(float value) {
    return shortest_text(value, 6, 9, [](const char* text) { return std::strtof(text, nullptr); });
}

double parse_double(const std::string& text, const std::string& where, const std::string& key) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    check(!text.empty() && end == text.c_str() + text.size(), where, ": ", key, " '", text, "' is not a number");
    return value;
}

int64_t parse_int64(const std::string& text, const std::string& where, const std::string& key) {
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    check(!text.empty() && end == text.c_str() + text.size() && errno != ERANGE, where, ": ", key, " '", text,
          "' is not an integer");
    return value;
}

uint64_t parse_uint64(const std::string& text, const std::string& where, const std::string& key) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    check(!text.empty() && text[0] != '-' && end == text.c_str() + text.size() && errno != ERANGE, where, ": ", key,
          " '", text, "' is not an unsigned integer");
    return value;
}

bool parse_bool(const std::string& text, const std::string& where, const std::string& key) {
    check(text == "true" || text == "false", where, ": ", key, " '", text, "' is not 'true' or 'false'");
    return text == "true";
}

const std::string& metadata_entry(const Metadata& fields, const std::string& key, const std::string& where,
                                  const std::string& prefix, const Metadata& added_since) {
    auto it = fields.find(key);
    if (it != fields.end()) return it->second;
    it = added_since.find(key);
    check(it != added_since.end(), where, ": metadata entry ", prefix, key, " is missing");
    return it->second;
}

// ---- configurations ----------------------------------------------------------------------

Metadata config_to_metadata(const ViTConfig& config) {
    Metadata out;
    for_each_config_field(config, [&](const std::string& key, const auto& value) { out[key] = metadata_text(value); });
    return out;
}

ViTConfig config_from_metadata(const Metadata& fields, const std::string& where) {
    // Config fields added since 0.9.0, and what a file written without them was trained with.
    static const Metadata kAddedSince090 = {{"patch_dropout", "0"}, {"lsa", "false"}};
    ViTConfig config;
    for_each_config_field(config, [&](const std::string& key, auto& value) {
        read_metadata_text(metadata_entry(fields, key, where, "config.", kAddedSince090), where, "config." + key,
                           value);
    });
    return config;
}

namespace {
void compare_config(const Checkpoint& checkpoint, const ViTConfig& requested, bool architecture_only) {
    static const std::unordered_set<std::string> kNotArchitecture = {"name",         "dropout",   "emb_dropout",
                                                                     "attn_dropout", "drop_path", "patch_dropout"};
    const Metadata saved = config_to_metadata(checkpoint.config);
    for_each_config_field(requested, [&](const std::string& key, const auto& value) {
        if (architecture_only && kNotArchitecture.count(key)) return;
        const std::string wanted = metadata_text(value);
        check(saved.at(key) == wanted, "checkpoint ", checkpoint.path, ": config ", key, " ", saved.at(key),
              " in the checkpoint, ", wanted, " requested");
    });
}
}  // namespace

void check_config(const Checkpoint& checkpoint, const ViTConfig& requested) {
    compare_config(checkpoint, requested, false);
}

void check_architecture(const Checkpoint& checkpoint, const ViTConfig& requested) {
    compare_config(checkpoint, requested, true);
}

// ---- saving ------------------------------------------------------------------------------

std::string optimizer_state_path(const std::string& weights_path) {
    const std::string suffix = ".safetensors";
    if (weights_path.size() > suffix.size() &&
        weights_path.compare(weights_path.size() - suffix.size(), suffix.size(), suffix) == 0)
        return weights_path.substr(0, weights_path.size() - suffix.size()) + ".state" + suffix;
    return weights_path + ".state";
}

namespace {
// A model's weights in the file layout, with the checkpoint's metadata.
NamedTensors file_weights(const VisionTransformer& model, const Metadata& metadata) {
    NamedTensors weights = state_dict(model);
    for (auto& [name, t] : weights.tensors) t = reshaped(t, file_shape(name, t.shape(), model.config));
    weights.metadata = metadata;
    return weights;
}
}  // namespace

Metadata checkpoint_metadata(const ViTConfig& config, const Metadata& options) {
    Metadata metadata;
    metadata["format"] = kCheckpointFormat;
    metadata["patchgrad.version"] = kVersion;
    for (const auto& [key, value] : config_to_metadata(config)) metadata["config." + key] = value;
    for (const auto& [key, value] : options) metadata["train." + key] = value;
    return metadata;
}

void save_checkpoint(const std::string& path, const VisionTransformer& model, const TrainingState& state,
                     const Metadata& options, const Optimizer* optimizer, const VisionTransformer* average) {
    Metadata metadata = checkpoint_metadata(model.config, options);
    for (const auto& [key, value] : state_to_metadata(state)) metadata["state." + key] = value;
    if (optimizer) {  // the resume file, a complete save on its own: first (see checkpoint.h)
        NamedTensors resume = file_weights(model, metadata);
        for (auto& [name, t] : optimizer->state_tensors()) resume.tensors.emplace_back("optimizer." + name, t);
        if (average)
            for (auto& [name, t] : file_weights(*average, {}).tensors) resume.tensors.emplace_back("ema." + name, t);
        save_safetensors(optimizer_state_path(path), resume);
    }
    save_safetensors(path, file_weights(average ? *average : model, metadata));
}

// ---- loading -----------------------------------------------------------------------------

namespace {
// load_checkpoint's checks on a file already read.
Checkpoint checkpoint_from(NamedTensors file, const std::string& path) {
    const std::string where = "checkpoint " + path;
    check_format(file.metadata, where);
    Checkpoint checkpoint;
    checkpoint.path = path;
    const auto version = file.metadata.find("patchgrad.version");
    if (version != file.metadata.end()) checkpoint.version = version->second;
    checkpoint.config = config_from_metadata(with_prefix_removed(file.metadata, "config."), where);
    checkpoint.options = with_prefix_removed(file.metadata, "train.");
    checkpoint.state = state_from_metadata(with_prefix_removed(file.metadata, "state."), where);
    try {
        validate(checkpoint.config);
    } catch (const std::invalid_argument& e) {
        fail(where, ": ", e.what());
    }
    // A resume file's optimizer state and weight average travel beside the weights.
    for (const auto& part : {std::pair{std::string("optimizer."), &checkpoint.optimizer},
                             std::pair{std::string("ema."), &checkpoint.ema}}) {
        const std::string& prefix = part.first;
        auto begin = std::stable_partition(file.tensors.begin(), file.tensors.end(), [&](const auto& named) {
            return named.first.compare(0, prefix.size(), prefix) != 0;
        });
        for (auto it = begin; it != file.tensors.end(); ++it)
            part.second->emplace_back(it->first.substr(prefix.size()), it->second);
        file.tensors.erase(begin, file.tensors.end());
    }
    // The tensors must be the ones the config describes before anyone builds its model: the
    // metadata alone could ask for a model of any size.
    WeightChecker check(file, checkpoint.config, where);
    for_each_parameter(checkpoint.config,
                       [&](const std::string& name, const Shape& shape) { check.expect(name, shape); });
    check.finish();
    checkpoint.weights = std::move(file);
    return checkpoint;
}
}  // namespace

Checkpoint load_checkpoint(const std::string& path) { return checkpoint_from(load_safetensors(path), path); }

void load_weights(VisionTransformer& model, const Checkpoint& checkpoint) {
    WeightChecker check(checkpoint.weights, model.config, "checkpoint " + checkpoint.path);
    NamedTensors ours;
    for (const auto& [name, p] : model.named_parameters())
        ours.tensors.emplace_back(name, reshaped(check.expect(name, p.shape()), p.shape()));
    check.finish();
    load_state_dict(model, ours);
}

std::string non_finite_element(const std::string& name, const Tensor& t) {
    const real* x = t.data();
    for (int64_t i = 0; i < t.numel(); ++i)
        if (!std::isfinite(x[i]))
            return name + " holds " + exact_text(double(x[i])) + " at element " + std::to_string(i);
    return "";
}

namespace {
// The optimizer state in optimizer_state_path(weights_path), checked to be from the same save
// as the weights (`global_step`): a resume file's "optimizer.*" tensors (its weights are a
// copy), or all of an older run's state file.
std::vector<std::pair<std::string, Tensor>> read_optimizer_state(const std::string& weights_path, int64_t global_step) {
    const std::string path = optimizer_state_path(weights_path);
    std::error_code ec;
    check(std::filesystem::exists(path, ec), "checkpoint ", weights_path, ": its optimizer state ", path,
          " is missing (both files are needed to continue the run exactly)");
    const NamedTensors file = load_safetensors(path);
    const std::string where = "optimizer state " + path;
    check_format(file.metadata, where);
    const int64_t step =
        parse_int64(metadata_entry(file.metadata, "state.global_step", where, ""), where, "state.global_step");
    check(step == global_step, where, ": global step ", step, " but ", weights_path, " is at step ", global_step,
          ": the two files are from different saves");
    const bool resume_file = file.metadata.count("config.dim") > 0;
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const auto& [name, t] : file.tensors) {
        if (name.compare(0, 10, "optimizer.") == 0)
            tensors.emplace_back(name.substr(10), t);
        else if (!resume_file)
            fail(where, ": unexpected tensor ", name, " (expected optimizer.state.*)");
    }
    return tensors;
}
}  // namespace

void check_resume_state(const Checkpoint& checkpoint, int64_t epochs, int64_t steps_per_epoch, int64_t batch) {
    const TrainingState& s = checkpoint.state;
    const std::string where = "checkpoint " + checkpoint.path;
    check(s.dropout_rng != std::array<uint64_t, 4>{}, where,
          ": state.dropout_rng.0 to .3 are all 0, a state the generator never leaves (every draw 0)");
    check(s.epoch <= epochs, where, ": state.epoch ", s.epoch, " is beyond the run's ", epochs, " epochs");
    check(s.step_in_epoch < steps_per_epoch, where, ": state.step_in_epoch ", s.step_in_epoch, " is not below the ",
          steps_per_epoch, " steps of an epoch of this data in batches of ", batch);
    check(s.epoch < epochs || s.step_in_epoch == 0, where, ": state.step_in_epoch ", s.step_in_epoch,
          " after the run's last epoch (state.epoch ", s.epoch, " of ", epochs, ")");
    // Both factors are at most the run's, whose product make_schedule checked.
    const int64_t step = s.epoch * steps_per_epoch + s.step_in_epoch;
    check(s.global_step == step, where, ": state.global_step ", s.global_step, ", but epoch ", s.epoch, " and step ",
          s.step_in_epoch, " of ", steps_per_epoch, " steps per epoch make ", step);
    // Every batch before the last of an epoch is full.
    check(s.seen == s.step_in_epoch * batch, where, ": state.seen ", s.seen, ", but ", s.step_in_epoch,
          " steps of batch ", batch, " make ", s.step_in_epoch * batch, " images");
}

void load_optimizer_state(Optimizer& optimizer, const std::string& weights_path, int64_t global_step) {
    optimizer.load_state_tensors(read_optimizer_state(weights_path, global_step));
}

bool has_resume_point(const std::string& weights_path) {
    std::error_code ec;
    return std::filesystem::exists(optimizer_state_path(weights_path), ec) || std::filesystem::exists(weights_path, ec);
}

Checkpoint load_resume_point(const std::string& weights_path) {
    const std::string resume_path = optimizer_state_path(weights_path);
    std::error_code ec;
    if (std::filesystem::exists(resume_path, ec)) {
        NamedTensors file = load_safetensors(resume_path);
        if (file.metadata.count("config.dim")) {  // a resume file holds the weights; an older one only the step
            Checkpoint checkpoint = checkpoint_from(std::move(file), resume_path);
            // A run stopped before its first step has no optimizer state yet.
            check(!checkpoint.optimizer.empty() || checkpoint.state.global_step == 0, "checkpoint ", resume_path,
                  ": holds no optimizer state (optimizer.*)");
            return checkpoint;
        }
    }
    Checkpoint checkpoint = load_checkpoint(weights_path);
    checkpoint.optimizer = read_optimizer_state(weights_path, checkpoint.state.global_step);
    return checkpoint;
}

}  // namespace patchgrad
