// results.h — results.json, the summary a finished run leaves in its output directory for
// tables and scripts: format "patchgrad-results-1", the preset, the config's name and the
// model's shape (--dim and the other overrides keep the name), the parameters, epochs and
// steps, the training images seen ("image_passes") and what they cost ("training_tflop",
// run_training_tflop of train_options.h: what the presets' budgets are counted in), the best evaluation accuracy, the
// final test images, loss and accuracy, and the wall time. Numbers are written to read back
// exactly (exact_text).
#pragma once

#include <cstdint>
#include <string>

#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/evaluation.h"
#include "patchgrad/vit/train/train_options.h"

namespace patchgrad {

std::string results_json(const TrainOptions& options, int64_t parameters, const TrainingState& state,
                         const std::string& eval_set, const Evaluation& test, double wall_seconds,
                         int64_t images_per_epoch);

}  // namespace patchgrad
