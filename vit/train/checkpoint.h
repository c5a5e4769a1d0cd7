// checkpoint.h — training checkpoints: a ViT's weights in a file timm and PyTorch load as is,
// plus everything `patchgrad train --resume` needs to continue bit for bit.
//
// A checkpoint is two safetensors files (autograd/io/safetensors.h):
//
//   last.safetensors        the model's state_dict under timm's names, except that
//                           patch_embed.proj.weight is written in timm's Conv2d layout
//                           [D, C, P, P] (the same bytes as our Linear's [D, C*P*P], see
//                           vit/patch_embedding.h), so
//                               model.load_state_dict(safetensors.torch.load_file(path))
//                           works on a timm VisionTransformer of the same shape. Its
//                           __metadata__ (string -> string) holds
//                             format             "patchgrad-checkpoint-1"
//                             patchgrad.version  the patchgrad that wrote it ("0.9.0";
//                                                absent before 0.9.0, where versions began)
//                             config.<field>     every ViTConfig field: `patchgrad eval`
//                                                rebuilds the model from the file alone
//                             train.<option>     the training recipe (train_options.h)
//                             state.<field>      the training position and running sums
//                                                (TrainingState below)
//   last.state.safetensors  the resume file: the same weights and metadata, plus the
//                           optimizer's state, "optimizer.state.<i>.<field>" as
//                           Optimizer::state_tensors numbers it.
//
// With a moving average of the weights (`train --ema`), the run evaluates the average, so
// the weights files (last.safetensors, best.safetensors) hold the average: what `patchgrad
// eval`, `predict` and PyTorch load is the model whose accuracy the run reported. The resume
// file holds the trained weights, as always, and the average beside them as "ema.<name>".
//
// Each file is written atomically (temporary file, then rename), the resume file first. It
// is a complete save on its own, and `--resume` reads only it (load_resume_point), so a crash
// at any moment of a save leaves a run that continues from the newest complete save: before
// the resume file's rename, the previous save; after it, this one (last.safetensors may then
// be one save behind until the next save rewrites it). Runs saved before the resume file held
// the weights (its metadata has only state.global_step) resume from last.safetensors, with the
// global step both carry checked to be the same. Numbers in the metadata are written so that
// they read back to exactly the same value (doubles with 17 significant digits), because a
// resumed run must continue to the last bit.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "patchgrad/autograd/enum_names.h"
#include "patchgrad/autograd/io/safetensors.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/vit/vision_transformer.h"

namespace patchgrad {

constexpr const char* kCheckpointFormat = "patchgrad-checkpoint-1";

using Metadata = std::map<std::string, std::string>;

// Where a run stands, and what of the running epoch a resumed run must not lose.
struct TrainingState {
    int64_t epoch = 0;                      // the epoch in progress, 0-based (== epochs once training is done)
    int64_t step_in_epoch = 0;              // optimizer steps of `epoch` already taken
    int64_t global_step = 0;                // optimizer steps of the whole run: where the LR schedule is
    std::array<uint64_t, 4> dropout_rng{};  // VisionTransformer::dropout_rng's state
    // The running training metrics of `epoch`: sums over the images seen so far.
    double loss_sum = 0;         // sum of per-batch mean loss x batch size
    double correct = 0;          // images classified right (mixed batches count fractionally)
    int64_t seen = 0;            // images
    double best_accuracy = -1;   // the best evaluation accuracy so far, -1 before the first
    double elapsed_seconds = 0;  // wall time of the run so far, resumes included
    double epoch_seconds = 0;    // of it, the time spent in `epoch`
};

// "runs/x/last.safetensors" -> "runs/x/last.state.safetensors" (any other name: + ".state").
std::string optimizer_state_path(const std::string& weights_path);

// The metadata every file of a run's checkpoints carries, without its "state." entries:
// "format", "patchgrad.version", "config.<field>" and "train.<key>" for `options`.
Metadata checkpoint_metadata(const ViTConfig& config, const Metadata& options);

// Writes the optimizer state (if `optimizer` is given) to optimizer_state_path(path), then
// the weights and metadata to `path`. `options` are stored under "train.<key>". With
// `average` (a model holding the weights' moving average), `path` gets its weights instead
// of `model`'s, and the resume file gets them too, as "ema.<name>". Throws
// std::runtime_error naming the file when a write fails; no partial file is left behind.
void save_checkpoint(const std::string& path, const VisionTransformer& model, const TrainingState& state,
                     const Metadata& options, const Optimizer* optimizer = nullptr,
                     const VisionTransformer* average = nullptr);

struct Checkpoint {
    std::string path;
    std::string version;  // "patchgrad.version": the patchgrad that wrote it; "" before 0.9.0
    ViTConfig config;
    Metadata options;  // the "train.<key>" entries, without the prefix
    TrainingState state;
    NamedTensors weights;  // as in the file: timm's layout (patch_embed.proj.weight [D, C, P, P])
    // A resume file's "optimizer.<name>" tensors, named <name> as Optimizer::state_tensors
    // does; empty for a weights file.
    std::vector<std::pair<std::string, Tensor>> optimizer;
    // A resume file's "ema.<name>" tensors (the weights' moving average), named <name>, in
    // the layout of `weights`; empty without --ema and for a weights file.
    std::vector<std::pair<std::string, Tensor>> ema;
};

// Reads `path` (weights and metadata). Throws std::invalid_argument naming the file for a
// file that is not a safetensors file (load_safetensors' message), a file without our
// format tag, a metadata entry that is missing or not a number where one is needed, a
// training state out of range (check_resume_state's comment), a config that validate()
// refuses, or tensors that are not exactly the config's parameters (named as in
// load_weights, non-finite values included). So the model its config describes is known to
// match the file before anything builds it.
Checkpoint load_checkpoint(const std::string& path);

// Throws "checkpoint <path>: config <field> <value> in the checkpoint, <value> requested"
// for the first field in which `requested` differs from the checkpoint's configuration.
void check_config(const Checkpoint& checkpoint, const ViTConfig& requested);
// The same for the fields that make the model what it is (`train --init`): not its name, and
// not the regularisation that acts in training only (the dropouts, drop path, patch dropout),
// which a run that starts from these weights may change.
void check_architecture(const Checkpoint& checkpoint, const ViTConfig& requested);

// Copies the checkpoint's weights into `model`. Checks every tensor first (so a failed load
// leaves the model as it was): "checkpoint <path>: blocks.0.attn.qkv.weight has shape
// [48, 16] but the model expects [96, 32]" (shapes as in the file), a missing or
// unexpected tensor, or one holding NaN or infinity, named.
void load_weights(VisionTransformer& model, const Checkpoint& checkpoint);

// "" when every element of `t` is finite, else "<name> holds nan at element 7". Weights
// that are NaN or infinite evaluate to chance accuracy and a loss of nan, which must not
// pass for a result.
std::string non_finite_element(const std::string& name, const Tensor& t);

// Whether the run whose weights file is `weights_path` has anything to resume from: its
// resume file or its weights file.
bool has_resume_point(const std::string& weights_path);

// The newest complete save of the run whose weights file is `weights_path`, optimizer state
// included: the resume file when it holds the weights, else (a run saved by an older
// patchgrad) the weights file and the optimizer state that belongs to it. Throws
// std::invalid_argument naming the file when nothing usable is there.
Checkpoint load_resume_point(const std::string& weights_path);

// Throws "checkpoint <path>: state.<field> <value> ..." when the checkpoint's training state
// cannot be where a run of `epochs` epochs of `steps_per_epoch` steps of `batch` images
// continues: its epoch beyond the run, its step beyond the epoch, a global step or image
// count that its epoch and step do not make, a dropout generator state of four zeros (which
// would draw 0 for ever). Reading a checkpoint checks what needs no recipe: counts not
// negative, sums finite and within them, durations from 0 to 1e10 s.
void check_resume_state(const Checkpoint& checkpoint, int64_t epochs, int64_t steps_per_epoch, int64_t batch);

// Restores the optimizer from optimizer_state_path(weights_path). Throws
// std::invalid_argument naming the file when it is missing, unreadable, or carries a global
// step other than `global_step` (the two files of a checkpoint are from different saves).
void load_optimizer_state(Optimizer& optimizer, const std::string& weights_path, int64_t global_step);

// The entry `key` of `fields` (a checkpoint's "config.", "train." or "state." entries with the
// prefix removed). A key of `added_since` (an entry added in a later version, mapped to what a
// file written before it was trained with) falls back to that value; any other missing key
// throws "<where>: metadata entry <prefix><key> is missing".
const std::string& metadata_entry(const Metadata& fields, const std::string& key, const std::string& where,
                                  const std::string& prefix, const Metadata& added_since = Metadata{});

// Every ViTConfig field as text ("dim" -> "192", "gelu" -> "none"), and back. A missing or
// malformed field throws naming `where` and the field.
Metadata config_to_metadata(const ViTConfig& config);
ViTConfig config_from_metadata(const Metadata& fields, const std::string& where);

// ---- metadata values -------------------------------------------------------------------
// Text that reads back to exactly the same value: integers in decimal, doubles and floats in
// the shortest form that round-trips in their own type ("0.001", and 0.1f as "0.1": neither
// "0.10000000000000001" nor "0.10000000149011612" appears), bools as "true"/"false". The parse
// functions throw std::invalid_argument "<where>: <key> '<text>' is not <what was expected>".
std::string exact_text(double value);
std::string exact_text(float value);
double parse_double(const std::string& text, const std::string& where, const std::string& key);
int64_t parse_int64(const std::string& text, const std::string& where, const std::string& key);
uint64_t parse_uint64(const std::string& text, const std::string& where, const std::string& key);
bool parse_bool(const std::string& text, const std::string& where, const std::string& key);

// The same for any field type a config or recipe has, so that one list of fields serves
// writing, reading and comparing (see for_each_config_field in checkpoint.cpp).
template <class T>
std::string metadata_text(const T& value) {
    if constexpr (std::is_same_v<T, std::string>)
        return value;
    else if constexpr (std::is_same_v<T, bool>)
        return value ? "true" : "false";
    else if constexpr (std::is_enum_v<T>)
        return enum_name(value);  // its EnumNames table
    else if constexpr (std::is_floating_point_v<T>)
        return exact_text(value);
    else
        return std::to_string(value);
}

template <class T>
void read_metadata_text(const std::string& text, const std::string& where, const std::string& key, T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
        value = text;
    } else if constexpr (std::is_same_v<T, bool>) {
        value = parse_bool(text, where, key);
    } else if constexpr (std::is_enum_v<T>) {
        value = parse_enum<T>(text, where + ": " + key);
    } else if constexpr (std::is_floating_point_v<T>) {
        value = static_cast<T>(parse_double(text, where, key));
    } else if constexpr (std::is_unsigned_v<T>) {
        value = parse_uint64(text, where, key);
    } else {
        value = parse_int64(text, where, key);
    }
}

}  // namespace patchgrad
