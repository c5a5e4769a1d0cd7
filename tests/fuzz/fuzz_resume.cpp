// fuzz_resume.cpp — a libFuzzer entry point for the resume reader: each input is written as a
// run's last.state.safetensors and read as `patchgrad train --resume` reads it
// (load_resume_point, the recipe it holds applied and validated, check_resume_state for an
// epoch of 40 images); an input that passes then builds its model, loads its weights and
// draws from its dropout generator. Built and run like tests/fuzz/fuzz_safetensors.cpp (see the
// top of that file):
//
//   cmake --build build-fuzz --target fuzz_resume
//   mkdir -p corpus-resume && build-fuzz/tests/fuzz_resume -max_total_time=60 -timeout=5 -max_len=65536 corpus-resume
//
// Half of the mutations are libFuzzer's own; the other half edit the metadata of the input (or,
// when it is no safetensors file, of a resume file of a tiny model made at start-up, which is
// how an empty corpus begins) with the mutator of the [fuzz] test in
// tests/vit/train/test_resume_state.cpp (tests/vit/metadata_mutator.h). Every input must
// resume or throw std::invalid_argument; a crash, a sanitizer report, another exception or an
// input slower than -timeout (an endless loop) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "patchgrad/autograd/io/safetensors.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/train_options.h"
#include "tests/vit/metadata_mutator.h"

namespace {

using namespace patchgrad;

// A folder of this process's own for the file each input becomes, removed at exit.
struct WorkDir {
    std::string path =
        (std::filesystem::temp_directory_path() / ("fuzz_resume." + std::to_string(::getpid()))).string();
    WorkDir() { std::filesystem::create_directories(path); }
    ~WorkDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

const std::string& work_dir() {
    static const WorkDir dir;
    return dir.path;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The resume file of a tiny model saved before its first step: 8x8 patches of 32x32 images,
// dim 8, one block; the quick preset's recipe for 2 epochs of batch 8.
const std::string& seed_file() {
    static const std::string bytes = [] {
        TrainOptions o = preset_options("quick");
        o.config.patch_size = 8;
        o.config.dim = 8;
        o.config.depth = 1;
        o.config.heads = 1;
        o.config.mlp_dim = 8;
        o.epochs = 2;
        o.batch = 8;
        o.full_patch_epochs = 0;
        VisionTransformer model(o.config, 1);
        AdamW optimizer(split_weight_decay(model.named_parameters()));
        TrainingState state;
        state.dropout_rng = model.dropout_rng->state();
        const std::string path = work_dir() + "/seed.safetensors";
        save_checkpoint(path, model, state, recipe_metadata(o), &optimizer);
        return read_file(optimizer_state_path(path));
    }();
    return bytes;
}

void resume(const std::string& bytes) {
    const std::string weights = work_dir() + "/last.safetensors";
    std::ofstream(optimizer_state_path(weights), std::ios::binary | std::ios::trunc) << bytes;
    const Checkpoint checkpoint = load_resume_point(weights);
    TrainOptions o;
    apply_checkpoint_recipe(o, checkpoint);
    validate(o);
    const int64_t train_images = 40, steps_per_epoch = (train_images + o.batch - 1) / o.batch;
    check_resume_state(checkpoint, o.epochs, steps_per_epoch, o.batch);
    VisionTransformer model(checkpoint.config, 0);  // no larger than the file: its tensors were checked
    load_weights(model, checkpoint);
    model.dropout_rng->set_state(checkpoint.state.dropout_rng);
    for (int i = 0; i < 16; ++i) model.dropout_rng->below(7);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        resume(std::string(reinterpret_cast<const char*>(data), size));
    } catch (const std::invalid_argument&) {
        // A refused file: the expected outcome for most inputs.
    }
    return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    Rng rng(seed);
    if (rng.below(2) == 0) return LLVMFuzzerMutate(data, size, max_size);
    NamedTensors file;
    try {
        file = parse_safetensors(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
    } catch (const std::invalid_argument&) {
        file = parse_safetensors(seed_file(), "the seed");
    }
    for (uint64_t k = 0, n = 1 + rng.below(3); k < n; ++k) test::mutate_metadata(file.metadata, rng);
    const std::string path = work_dir() + "/mutated.safetensors";
    save_safetensors(path, file);
    const std::string bytes = read_file(path);
    if (bytes.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
    std::memcpy(data, bytes.data(), bytes.size());
    return bytes.size();
}
