// trainer.h — training a ViT on CIFAR-10 end to end, as a library: what `patchgrad train`
// and `patchgrad eval` run (vit/cli/train.cpp, eval.cpp), and what the tests drive on tiny
// synthetic data (tests/vit/train/test_trainer.cpp).
//
// One optimizer step, as in timm's train loop:
//
//   indices = Batcher(train size, batch, seed).batch(epoch, step)      the same batches on resume
//   rng     = Rng(derive_seed(seed, {epoch, step}))                   the same augmentation on resume
//   batch   = augment(train.subset(indices), rng)                      crop/flip, RandAugment, erasing
//   x       = mixup/cutmix(to_tensor(batch, CIFAR-10 mean/std), rng)   when --mixup/--cutmix
//   loss    = cross_entropy(model(x), labels, smoothing)              mixed_cross_entropy when mixing
//   loss.backward(); clip_grad_norm; lr = schedule(global step); optimizer.step(); zero_grad()
//
// Everything random is a function of (seed, epoch, step) or lives in the checkpoint (the
// model's dropout generator), and the ops give the same bits on any number of threads, so
// a run stopped at any step and resumed ends with bit-identical weights to an uninterrupted
// one, on any thread count.
//
// What a run writes into its output directory:
//   metrics.csv        one row per epoch (EpochRecord), rewritten atomically each epoch
//   metrics.png        loss curves left, accuracy curves right, rewritten each epoch
//   last.safetensors   + last.state.safetensors (optimizer): every epoch, and when stopped
//   best.safetensors   the weights whenever the evaluation accuracy improves
//   results.json       at the end: the final test accuracy, loss, parameters, wall time
//   .patchgrad.lock    locked while the run goes on, so that no second run writes into the
//                      directory meanwhile (autograd/io/folder_lock.h); holds the run's process id
//
// The parts, one job per file, all included here:
//   train_options.h    TrainOptions, the table of options, presets, validation, the recipe
//   evaluation.h       accuracy, loss and confusion matrix (evaluate, format_evaluation)
//   metrics.h          metrics.csv and metrics.png (EpochRecord)
//   results.h          results.json
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/evaluation.h"
#include "patchgrad/vit/train/metrics.h"
#include "patchgrad/vit/train/results.h"
#include "patchgrad/vit/train/train_options.h"

namespace patchgrad {

// ---- the run -----------------------------------------------------------------------------

struct TrainOutput {
    std::ostream* out = &std::cout;        // the header, one line per epoch, the final result
    std::ostream* log = &std::cerr;        // progress
    bool terminal = false;                 // live progress bar on `log` instead of periodic lines
    std::function<bool()> stop_requested;  // polled after every step (Ctrl-C): save and stop
};

enum class StopReason { Finished, MaxSteps, Interrupted };

struct TrainResult {
    StopReason stop = StopReason::Finished;
    TrainingState state;               // where the run stands
    std::vector<EpochRecord> history;  // every epoch of the run, those before a resume included
    std::string checkpoint;            // the last.safetensors written
    std::optional<Evaluation> test;    // the final test evaluation, when finished
};

// Trains as described at the top. Throws std::invalid_argument for bad options (validate),
// a checkpoint that does not fit on --resume, or a missing --resume checkpoint; and
// std::runtime_error for an output directory that cannot be written or that another run is
// using (before training starts), missing or broken data files, or a loss that is no longer
// finite.
TrainResult train(const TrainOptions& options, const TrainOutput& output = {});

}  // namespace patchgrad
