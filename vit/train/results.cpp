// results.cpp — results.json; see results.h.
#include "patchgrad/vit/train/results.h"

#include <sstream>

#include "patchgrad/autograd/io/json.h"

namespace patchgrad {

std::string results_json(const TrainOptions& options, int64_t parameters, const TrainingState& state,
                         const std::string& eval_set, const Evaluation& test, double wall_seconds,
                         int64_t images_per_epoch) {
    const ViTConfig& c = options.config;
    std::ostringstream json;
    json << "{\n  \"format\": \"patchgrad-results-1\",\n  \"preset\": " << json_string(options.preset)
         << ",\n  \"config\": " << json_string(c.name);
    json << ",\n  \"model\": {\"patch\": " << c.patch_size << ", \"dim\": " << c.dim << ", \"depth\": " << c.depth
         << ", \"heads\": " << c.heads << ", \"mlp\": " << c.mlp_hidden() << "}"
         << ",\n  \"parameters\": " << parameters << ",\n  \"epochs\": " << options.epochs
         << ",\n  \"steps\": " << state.global_step << ",\n  \"image_passes\": " << options.epochs * images_per_epoch
         << ",\n  \"training_tflop\": "
         << exact_text(run_training_tflop(options, double(options.epochs), images_per_epoch))
         << ",\n  \"best_eval_accuracy\": " << exact_text(state.best_accuracy)
         << ",\n  \"eval_set\": " << json_string(eval_set) << ",\n  \"test_images\": " << test.images
         << ",\n  \"test_loss\": " << exact_text(test.loss) << ",\n  \"test_accuracy\": " << exact_text(test.accuracy)
         << ",\n  \"wall_seconds\": " << exact_text(wall_seconds) << "\n}\n";
    return json.str();
}

}  // namespace patchgrad
