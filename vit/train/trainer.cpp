// trainer.cpp — the training loop (class Trainer, one method per stage of a run) behind
// train() (see trainer.h). The options, evaluation, metrics files and results.json it uses
// live beside it: train_options.cpp, evaluation.cpp, metrics.cpp, results.cpp.
#include "patchgrad/vit/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/cpu/gemm/gemm.h"
#include "patchgrad/autograd/cpu/threads/parallel.h"
#include "patchgrad/autograd/io/atomic_file.h"
#include "patchgrad/autograd/io/folder_lock.h"
#include "patchgrad/autograd/io/json.h"
#include "patchgrad/autograd/optim/ema.h"
#include "patchgrad/autograd/optim/lr_schedule.h"
#include "patchgrad/autograd/optim/optimizer.h"
#include "patchgrad/datasets/augment.h"
#include "patchgrad/datasets/batcher.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/datasets/mixup.h"
#include "patchgrad/datasets/split.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/train/progress.h"
#include "patchgrad/vit/train/results.h"
#include "patchgrad/vit/train/step_sample.h"
#include "patchgrad/vit/train/thread_choice.h"

namespace patchgrad {

namespace fs = std::filesystem;

// ---- the training run --------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The data folder, as an absolute path, for a resumed run to compare with.
std::string data_identity(const std::string& dir) {
    std::error_code ec;
    const fs::path absolute = fs::weakly_canonical(fs::absolute(dir), ec);
    return ec ? dir : absolute.string();
}

// The files a run writes into its output directory.
const char* const kRunFiles[] = {
    "last.safetensors", "last.state.safetensors", "best.safetensors", "metrics.csv", "metrics.png", "results.json"};

// --init's weights file, checked against the model to train. Its run's split is compared too: the
// validation images are drawn from the training files by --seed, so weights trained with
// another seed or split have seen some of this run's validation images, which would flatter it.
Checkpoint load_init(const TrainOptions& o, std::ostream& log) {
    Checkpoint init;
    try {
        init = load_checkpoint(o.init);
        check_architecture(init, o.config);
    } catch (const std::exception& e) {
        throw std::invalid_argument(std::string("--init: ") + e.what());
    }
    if (o.validation == 0) return init;
    const auto trained_with = [&](const char* flag) {
        const auto entry = init.options.find(flag);
        return entry == init.options.end() ? std::string("?") : entry->second;
    };
    const std::string seed = std::to_string(o.seed), validation = std::to_string(o.validation);
    if (trained_with("seed") != seed || trained_with("validation") != validation)
        log << "warning: --init " << o.init << " was trained with --seed " << trained_with("seed") << " --validation "
            << trained_with("validation") << ", this run holds out " << validation << " images by --seed " << seed
            << ": some of them may be images those weights trained on (give its --seed and --validation, or "
            << "--validation 0)\n";
    return init;
}

// Whether `name` is a copy of a damaged metrics.csv that a resumed run kept aside:
// "metrics.csv.unreadable", "metrics.csv.unreadable.2", ...
bool is_kept_metrics(const std::string& name) {
    const std::string kept = "metrics.csv.unreadable";
    if (name.compare(0, kept.size(), kept) != 0) return false;
    const std::string rest = name.substr(kept.size());
    return rest.empty() ||
           (rest.size() > 1 && rest[0] == '.' && rest.find_first_not_of("0123456789", 1) == std::string::npos);
}

// Creates the output directory; a typo in --out fails now, not after the first hour of training.
void create_out_dir(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        fail<std::runtime_error>("cannot create the output directory ", dir, ": ",
                                 ec ? ec.message() : "a file of that name exists");
}

// One run at a time in --out: a second run (or a --resume of the same one) into it would mix
// two runs' files.
std::unique_ptr<FolderLock> lock_out_dir(const TrainOptions& o, std::ostream& log) {
    std::unique_ptr<FolderLock> lock;
    try {
        lock = std::make_unique<FolderLock>(o.out_dir);
    } catch (const FolderInUse& e) {
        fail<std::runtime_error>(
            "--out ", o.out_dir, " is in use by another patchgrad train (",
            e.holder > 0 ? "process " + std::to_string(e.holder) : std::string("its process id is not known"),
            "): wait for it to end, or stop it, or choose another --out");
    } catch (const std::runtime_error& e) {
        fail<std::runtime_error>("the output directory ", o.out_dir, " is not writable: ", e.what());
    }
    if (!lock->held())
        log << "warning: " << lock->unavailable() << ": nothing keeps a second run out of " << o.out_dir << "\n";
    return lock;
}

// With --out locked: removes the temporary files of killed saves, and refuses a directory
// holding a run unless this run resumes it or `overwrite`, which deletes everything that run
// wrote (so no stale results.json is left beside the new checkpoints).
void claim_out_dir(const TrainOptions& o) {
    std::vector<std::string> found, kept;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(o.out_dir, ec)) {
        const std::string name = entry.path().filename().string();
        for (const char* file : kRunFiles)
            if (is_temporary_name(name, file) || name == std::string(file) + ".tmp") fs::remove(entry.path(), ec);
        if (is_kept_metrics(name)) kept.push_back(name);
    }
    if (o.resume) return;
    for (const char* name : kRunFiles)
        if (fs::exists(fs::path(o.out_dir) / name, ec)) found.push_back(name);
    if (found.empty() && !(o.overwrite && !kept.empty())) return;
    if (!o.overwrite) {
        std::string list;
        for (const std::string& name : found) list += (list.empty() ? "" : ", ") + name;
        const bool resumable = has_resume_point((fs::path(o.out_dir) / "last.safetensors").string());
        if (resumable)
            fail("--out ", o.out_dir, " holds a run (", list,
                 "): continue it with --resume, choose another --out, or replace it with --overwrite");
        fail("--out ", o.out_dir, " holds files of a run that saved no checkpoint to continue from (", list,
             "): choose another --out, or replace them with --overwrite");
    }
    found.insert(found.end(), kept.begin(), kept.end());
    for (const std::string& name : found)
        if (!fs::remove(fs::path(o.out_dir) / name, ec) && ec)
            fail<std::runtime_error>("--overwrite: cannot delete ", (fs::path(o.out_dir) / name).string(), ": ",
                                     ec.message());
}

// Proves a file can be written in the locked directory.
void check_writable(const std::string& dir) {
    std::error_code ec;
    const std::string probe = (fs::path(dir) / ".patchgrad-write-test.tmp").string();
    const bool writable = static_cast<bool>(std::ofstream(probe));
    fs::remove(probe, ec);
    check<std::runtime_error>(writable, "the output directory ", dir, " is not writable");
}

// The training set split for validation, and the test set.
struct Data {
    ImageSet train, validation, test;
    const ImageSet& eval_set() const { return validation.size() > 0 ? validation : test; }
    std::string eval_name() const { return validation.size() > 0 ? "validation" : "test"; }
};

Data load_data(const TrainOptions& o, std::ostream& log) {
    Data data;
    try {
        TrainValidationSplit split = split_validation(load_cifar10_train(o.data_dir, &log), o.validation, o.seed);
        data.train = std::move(split.train);
        data.validation = std::move(split.validation);
        data.test = load_cifar10_test(o.data_dir, &log);
    } catch (const std::exception& e) {
        fail<std::runtime_error>("CIFAR-10 from ", o.data_dir, " (", o.data_source, "): ", e.what());
    }
    return data;
}

std::unique_ptr<Optimizer> make_optimizer(const TrainOptions& o, const VisionTransformer& model) {
    switch (o.optimizer) {
        case OptimizerKind::Sgd:
            return std::make_unique<SGD>(split_weight_decay(model.named_parameters()), o.lr, o.momentum, 0.0,
                                         o.weight_decay, o.nesterov);
        case OptimizerKind::Adam:
            return std::make_unique<Adam>(split_weight_decay(model.named_parameters()), o.lr,
                                          std::pair<double, double>{0.9, 0.999}, 1e-8, o.weight_decay);
        case OptimizerKind::AdamW:
            return std::make_unique<AdamW>(split_weight_decay(model.named_parameters()), o.lr,
                                           std::pair<double, double>{0.9, 0.999}, 1e-8, o.weight_decay);
    }
    throw std::logic_error("make_optimizer: an OptimizerKind without an optimizer");
}

// [snippet:make-schedule]
LRSchedule make_schedule(const TrainOptions& o, int64_t steps_per_epoch) {
    LRSchedule s;
    s.kind = o.schedule;
    s.base_lr = o.lr;
    s.total = checked_mul(o.epochs, steps_per_epoch, "train options: --epochs x steps per epoch");
    // Warmup beyond the run is capped at the run, in epochs first: 1e19 epochs of steps
    // would overflow the step count.
    s.warmup =
        std::min<int64_t>(std::llround(std::min(o.warmup_epochs, double(o.epochs)) * double(steps_per_epoch)), s.total);
    s.min_lr = o.min_lr;
    s.step_size = std::max<int64_t>(1, (s.total - s.warmup) / 3);  // "step": x0.1 after each third
    s.gamma = 0.1;
    s.validate();
    return s;
}
// [/snippet:make-schedule]

Augmentation make_augmentation(const TrainOptions& o) {
    Augmentation a;
    a.crop_flip = o.augment == AugmentKind::CropFlip;
    if (o.rand_augment != "none") a.rand_augment = RandAugment::parse(o.rand_augment);
    if (o.erasing > 0) {
        RandomErasing erasing;
        erasing.prob = o.erasing;
        a.erasing = erasing;
    }
    return a;
}

std::optional<Mixup> make_mixup(const TrainOptions& o) {
    if (o.mixup == 0 && o.cutmix == 0) return std::nullopt;
    Mixup m;
    m.mixup_alpha = o.mixup;
    m.cutmix_alpha = o.cutmix;
    return m;
}

// Images whose largest logit is their label. A mixed image counts in proportion to the
// share of the label it was predicted as, so with mixing the accuracy stays in [0, 1].
double correct_predictions(const Tensor& logits, const MixedBatch& mixed) {
    const int64_t K = logits.size(1);
    double correct = 0;
    for (int64_t i = 0; i < logits.size(0); ++i) {
        const int64_t predicted = argmax(logits.data() + i * K, K);
        correct +=
            mixed.lambda * (predicted == mixed.labels_a[i]) + (1 - mixed.lambda) * (predicted == mixed.labels_b[i]);
    }
    return correct;
}

MixedBatch unmixed(const Tensor& images, const std::vector<int64_t>& labels) {
    MixedBatch batch;
    batch.images = images;
    batch.labels_a = labels;
    batch.labels_b = labels;
    return batch;
}

class Trainer {
public:
    // `init`: --init's checkpoint, for a new run that starts from its weights.
    Trainer(const TrainOptions& options, const TrainOutput& output, Data data, const std::optional<Checkpoint>& init);
    TrainResult run();

private:
    std::string path(const char* file) const { return (fs::path(options_.out_dir) / file).string(); }
    // The model the run evaluates and reports: the weights' moving average with --ema.
    VisionTransformer& evaluated() { return average_model_ ? *average_model_ : *model_; }
    double elapsed() const { return elapsed_base_ + seconds_since(session_start_); }
    void resume();
    void print_header() const;
    std::optional<StopReason> train_epoch();
    void train_step(const std::vector<int64_t>& order);
    void show_progress();
    std::optional<StopReason> stop_due() const;
    void end_epoch();
    void check_finite() const;
    void save(const std::string& file, bool with_optimizer);
    TrainResult stopped(StopReason reason);
    TrainResult finish();

    const TrainOptions options_;
    const TrainOutput output_;
    const ChannelStats stats_ = ChannelStats::cifar10();
    Data data_;
    std::unique_ptr<VisionTransformer> model_;
    std::vector<Tensor> params_;
    std::unique_ptr<Optimizer> optimizer_;
    std::unique_ptr<VisionTransformer> average_model_;  // --ema: holds the average; else null
    std::unique_ptr<ExponentialMovingAverage> ema_;
    Batcher batcher_;
    LRSchedule schedule_;
    Augmentation augmentation_;
    std::optional<Mixup> mixup_;
    ProgressReporter progress_;

    TrainingState state_;
    std::vector<EpochRecord> history_;
    double last_lr_ = 0;
    Clock::time_point session_start_ = Clock::now();
    double elapsed_base_ = 0;           // elapsed seconds of the run before this start
    int64_t session_first_step_ = 0;    // the global step this process started from
    Clock::time_point epoch_start_;     // when this process began the current epoch
    double epoch_base_ = 0;             // training seconds the epoch had before that
    int64_t epoch_first_step_ = 0;      // the epoch's step at epoch_start_
    int64_t epoch_session_images_ = 0;  // images trained on since epoch_start_
};

Trainer::Trainer(const TrainOptions& options, const TrainOutput& output, Data data,
                 const std::optional<Checkpoint>& init)
    : options_(options),
      output_(output),
      data_(std::move(data)),
      model_(std::make_unique<VisionTransformer>(options.config, options.seed)),
      params_(model_->parameters()),
      optimizer_(make_optimizer(options, *model_)),
      batcher_(data_.train.size(), options.batch, options.seed),
      schedule_(make_schedule(options, batcher_.num_batches())),
      augmentation_(make_augmentation(options)),
      mixup_(make_mixup(options)),
      progress_(*output.log, output.terminal, options.log_every) {
    if (options.ema > 0) {
        average_model_ = std::make_unique<VisionTransformer>(options.config, options.seed);
        ema_ = std::make_unique<ExponentialMovingAverage>(params_, average_model_->parameters(), options.ema);
    }
    if (options.resume) {
        resume();
    } else if (init) {
        load_weights(*model_, *init);
        if (average_model_) load_weights(*average_model_, *init);
    }
    elapsed_base_ = state_.elapsed_seconds;
    session_first_step_ = state_.global_step;
}

void Trainer::resume() {
    const Checkpoint checkpoint = load_resume_point(path("last.safetensors"));
    check_config(checkpoint, options_.config);
    check_recipe(checkpoint, options_);
    check_resume_state(checkpoint, options_.epochs, batcher_.num_batches(), options_.batch);
    load_weights(*model_, checkpoint);
    optimizer_->load_state_tensors(checkpoint.optimizer);
    if (average_model_) {
        check(!checkpoint.ema.empty(), "checkpoint ", checkpoint.path, ": --ema ", exact_text(options_.ema),
              " but the file holds no ema.* weights");
        Checkpoint average = checkpoint;
        average.weights.tensors = checkpoint.ema;
        load_weights(*average_model_, average);
    }
    state_ = checkpoint.state;
    model_->dropout_rng->set_state(state_.dropout_rng);
    // Another data folder is allowed (the same files moved, say) but must not pass unnoticed.
    // The checkpoint holds the path as valid UTF-8 (json.h), so it is compared so.
    const auto data = checkpoint.options.find("data");
    if (data != checkpoint.options.end() && data->second != valid_utf8(data_identity(options_.data_dir)))
        *output_.log << "warning: the run was trained on " << data->second << "; it continues on "
                     << data_identity(options_.data_dir) << "\n";
    const std::string metrics = path("metrics.csv");
    if (!fs::exists(metrics)) return;
    try {
        for (const EpochRecord& r : read_metrics_csv(metrics))
            if (r.epoch <= state_.epoch) history_.push_back(r);
    } catch (const std::invalid_argument& e) {
        // The checkpoint, not the metrics, is what continues the run: a damaged metrics.csv
        // is kept aside for the user, under a name no earlier one has, and the curves restart.
        history_.clear();
        std::string kept = metrics + ".unreadable";
        for (int n = 2; fs::exists(kept); ++n) kept = metrics + ".unreadable." + std::to_string(n);
        std::error_code ec;
        fs::rename(metrics, kept, ec);
        *output_.log << "warning: " << e.what() << "; kept as " << kept << ", and metrics.csv "
                     << "restarts with the epochs trained from here\n";
    }
}

void Trainer::print_header() const {
    std::ostream& out = *output_.out;
    const TrainOptions& o = options_;
    out << "patchgrad train: " << describe(o.config) << ", drop path " << exact_text(o.config.drop_path) << ", dropout "
        << exact_text(o.config.dropout)
        << (o.config.patch_dropout > 0 ? ", patch dropout " + exact_text(o.config.patch_dropout) : "") << "; "
        << model_->num_parameters() << " parameters\n";
    out << "data: " << o.data_dir << " (" << o.data_source << "): " << data_.train.size() << " training, "
        << data_.validation.size() << " validation, " << data_.test.size() << " test images\n";
    const double passes = double(o.epochs) * double(data_.train.size());
    char work[240], full[80] = "";
    if (o.full_patch_epochs > 0) {
        std::snprintf(full, sizeof full, " (%.4f in the last %lld, every patch)",
                      training_gflop_per_image(with_every_patch(o.config)),
                      static_cast<long long>(o.full_patch_epochs));
    }
    std::snprintf(work, sizeof work, "%.4f GFLOP per training image%s, %.1f TFLOP for %.0f image passes",
                  training_gflop_per_image(o.config), full,
                  run_training_tflop(o, double(o.epochs), int64_t(data_.train.size())), passes);
    out << "recipe:" << recipe_flags(o) << " (" << batcher_.num_batches() << " steps per epoch; " << work << ")\n";
    out << "compute: " << cpu_model() << "; gemm kernels " << gemm_kernel_description() << "; " << num_threads()
        << (num_threads() == 1 ? " thread" : " threads") << (o.threads == 0 ? " (auto)\n" : "\n");
    out << "precision: " << matmul_precision_description(o.precision) << "\n";
    out << bf16_header_note(o.precision);
    out << "output: " << o.out_dir << "/ (metrics.csv, metrics.png, last.safetensors, best.safetensors)\n";
    if (!o.resume && o.init != "none") out << "init: the weights of " << o.init << "\n";
    if (o.resume)
        out << "resuming from " << optimizer_state_path(path("last.safetensors")) << " at epoch " << state_.epoch + 1
            << ", step " << state_.step_in_epoch << " of " << batcher_.num_batches() << " (global step "
            << state_.global_step << ")\n";
    out << std::flush;
}

TrainResult Trainer::run() {
    print_header();
    while (state_.epoch < options_.epochs) {
        if (const std::optional<StopReason> reason = train_epoch()) return stopped(*reason);
        end_epoch();
    }
    return finish();
}

// Trains the rest of the current epoch; returns why, if it stopped before the end.
std::optional<StopReason> Trainer::train_epoch() {
    const std::vector<int64_t> order = batcher_.epoch_order(state_.epoch);
    epoch_start_ = Clock::now();
    epoch_base_ = state_.epoch_seconds;
    epoch_first_step_ = state_.step_in_epoch;
    epoch_session_images_ = 0;
    // --full-patch-epochs: the last epochs see every patch. The config (and so the checkpoint)
    // keeps the run's rate; only the layer's is switched.
    if (model_->patch_drop)
        model_->patch_drop->p = drops_patches_in(options_, state_.epoch) ? options_.config.patch_dropout : real(0);
    while (state_.step_in_epoch < batcher_.num_batches()) {
        // Checked before a step rather than after it, so that a stop due after the epoch's
        // last step lets the epoch finish (evaluation, metrics, checkpoint) first.
        if (const std::optional<StopReason> reason = stop_due()) {
            progress_.clear();
            return reason;
        }
        train_step(order);
        show_progress();
    }
    progress_.clear();
    state_.epoch_seconds = epoch_base_ + seconds_since(epoch_start_);
    return std::nullopt;
}

void Trainer::train_step(const std::vector<int64_t>& order) {
    const int64_t epoch = state_.epoch, step = state_.step_in_epoch;
    // [snippet:train-step]
    ImageSet batch = data_.train.subset(batcher_.batch(order, step));
    Rng rng(derive_seed(options_.seed, {static_cast<uint64_t>(epoch), static_cast<uint64_t>(step)}));
    augmentation_.apply(batch, rng);
    const Tensor images = to_tensor(batch, stats_);
    const MixedBatch mixed = mixup_ ? mixup_->apply(images, batch.labels, rng) : unmixed(images, batch.labels);

    const Tensor logits = model_->forward(mixed.images);
    Tensor loss = mixed_cross_entropy(logits, mixed, static_cast<real>(options_.label_smoothing));
    const double loss_value = double(loss.item());
    if (!std::isfinite(loss_value))
        fail<std::runtime_error>("the loss is ", exact_text(loss_value), " at epoch ", epoch + 1, ", step ", step + 1,
                                 ": training diverged; try a smaller --lr or --clip-grad 1");
    loss.backward();
    if (options_.clip_grad > 0) clip_grad_norm(params_, options_.clip_grad);
    last_lr_ = schedule_.lr_at(state_.global_step);
    optimizer_->set_lr(last_lr_);
    optimizer_->step();
    optimizer_->zero_grad();
    if (ema_) ema_->update(state_.global_step);
    // [/snippet:train-step]

    const int64_t B = logits.size(0);
    state_.correct += correct_predictions(logits, mixed);
    state_.loss_sum += loss_value * double(B);
    state_.seen += B;
    epoch_session_images_ += B;
    ++state_.step_in_epoch;
    ++state_.global_step;
}

void Trainer::show_progress() {
    const double epoch_time = seconds_since(epoch_start_);
    ProgressLine line;
    line.epoch = state_.epoch + 1;
    line.epochs = options_.epochs;
    line.step = state_.step_in_epoch;
    line.steps = batcher_.num_batches();
    line.loss = state_.loss_sum / double(state_.seen);
    line.accuracy = state_.correct / double(state_.seen);
    line.images_per_second = per_second(double(epoch_session_images_), epoch_time);
    // At the pace of this process's steps: the run it resumed may have had other threads.
    line.eta_seconds =
        eta_seconds(state_.step_in_epoch - epoch_first_step_, batcher_.num_batches() - epoch_first_step_, epoch_time);
    progress_.update(line, seconds_since(session_start_));
}

std::optional<StopReason> Trainer::stop_due() const {
    if (output_.stop_requested && output_.stop_requested()) return StopReason::Interrupted;
    if (options_.max_steps > 0 && state_.global_step >= options_.max_steps) return StopReason::MaxSteps;
    return std::nullopt;
}

void Trainer::end_epoch() {
    const double train_seconds = state_.epoch_seconds;
    const auto eval_start = Clock::now();
    const Evaluation eval = evaluate(evaluated(), data_.eval_set(), stats_, options_.batch, options_.tta);
    EpochRecord r;
    r.epoch = state_.epoch + 1;
    r.step = state_.global_step;
    r.lr = last_lr_;
    r.train_loss = state_.loss_sum / double(state_.seen);
    r.train_acc = state_.correct / double(state_.seen);
    r.eval_set = data_.eval_name();
    r.eval_loss = eval.loss;
    r.eval_acc = eval.accuracy;
    r.epoch_seconds = train_seconds + seconds_since(eval_start);
    r.elapsed_seconds = elapsed();
    r.img_per_s = per_second(double(state_.seen), train_seconds);
    history_.push_back(r);

    TrainingState next;  // the next epoch, with fresh running sums
    next.epoch = state_.epoch + 1;
    next.global_step = state_.global_step;
    next.best_accuracy = state_.best_accuracy;
    state_ = next;
    const bool improved = eval.accuracy > state_.best_accuracy;
    if (improved) {
        state_.best_accuracy = eval.accuracy;
        save("best.safetensors", false);
    }
    write_metrics_csv(path("metrics.csv"), history_);
    write_metrics_chart(path("metrics.png"), history_);
    save("last.safetensors", true);

    // At this process's pace, evaluations included: the run it resumed may have had other threads.
    const int64_t steps = options_.epochs * batcher_.num_batches();
    const double to_go =
        eta_seconds(r.step - session_first_step_, steps - session_first_step_, seconds_since(session_start_));
    *output_.out << format_epoch_line(r, options_.epochs, improved, to_go) << '\n' << std::flush;
}

// A save holding NaN or infinity could be neither resumed nor evaluated: the run stops
// instead, saving nothing, so the previous save stays the point to resume from.
void Trainer::check_finite() const {
    std::string bad;
    const auto find = [&bad](const std::string& prefix, const std::vector<std::pair<std::string, Tensor>>& tensors) {
        for (const auto& [name, t] : tensors)
            if (bad.empty()) bad = non_finite_element(prefix + name, t);
    };
    find("", model_->named_parameters());
    if (average_model_) find("ema.", average_model_->named_parameters());
    find("optimizer.", optimizer_->state_tensors());
    if (bad.empty()) return;
    const std::string last = path("last.safetensors");
    fail<std::runtime_error>(
        "training diverged: after step ", state_.global_step, " of the run, ", bad, ", so nothing is saved; ",
        has_resume_point(last) ? "the last save in " + options_.out_dir + " stays the point to resume from"
                               : std::string("the run has no save to resume from"),
        ". Try a smaller --lr or --clip-grad 1");
}

void Trainer::save(const std::string& file, bool with_optimizer) {
    check_finite();
    state_.dropout_rng = model_->dropout_rng->state();
    state_.elapsed_seconds = elapsed();
    Metadata options = recipe_metadata(options_);
    options["data"] = data_identity(options_.data_dir);  // not part of the recipe: compared on resume, with a warning
    save_checkpoint(path(file.c_str()), *model_, state_, options, with_optimizer ? optimizer_.get() : nullptr,
                    average_model_.get());
}

TrainResult Trainer::stopped(StopReason reason) {
    state_.epoch_seconds = state_.step_in_epoch > 0 ? epoch_base_ + seconds_since(epoch_start_) : 0;
    save("last.safetensors", true);
    const std::string why = reason == StopReason::Interrupted
                                ? "interrupted"
                                : "stopped after " + std::to_string(state_.global_step) + " steps (--max-steps)";
    *output_.out << why << " at epoch " << state_.epoch + 1 << ", step " << state_.step_in_epoch << " of "
                 << batcher_.num_batches() << ": saved " << path("last.safetensors")
                 << "\nto continue: patchgrad train --resume --out " << options_.out_dir
                 << (options_.data_source == "--data" ? " --data " + options_.data_dir : "") << "\n"
                 << std::flush;
    return TrainResult{reason, state_, history_, path("last.safetensors"), std::nullopt};
}

TrainResult Trainer::finish() {
    const Evaluation test = evaluate(evaluated(), data_.test, stats_, options_.batch, options_.tta);
    const double wall = elapsed();
    write_text_atomically(path("results.json"), results_json(options_, model_->num_parameters(), state_,
                                                             data_.eval_name(), test, wall, data_.train.size()));
    char line[200];
    std::snprintf(line, sizeof line, "test accuracy %.2f%% (%lld images, loss %.4f) after %lld epoch%s, %s\n",
                  100 * test.accuracy, static_cast<long long>(test.images), test.loss,
                  static_cast<long long>(options_.epochs), options_.epochs == 1 ? "" : "s",
                  format_duration(wall).c_str());
    *output_.out << line << "results: " << path("results.json") << "\n" << std::flush;
    return TrainResult{StopReason::Finished, state_, history_, path("last.safetensors"), test};
}

}  // namespace

TrainResult train(const TrainOptions& options, const TrainOutput& output) {
    validate(options);
    const std::string last = (fs::path(options.out_dir) / "last.safetensors").string();
    check(!options.resume || has_resume_point(last), "--resume: no checkpoint ", last,
          " to continue from (leave out --resume to start a new run)");
    // Missing data and an unusable --out both fail here, in seconds, before any training;
    // the data first, so that a bad data directory leaves no empty run directory behind.
    Data data = load_data(options, *output.log);
    // With the data, the steps per epoch and so the schedule are known: checked here too, so
    // that no option fails after the output directory exists.
    make_schedule(options, Batcher(data.train.size(), options.batch, options.seed).num_batches());
    std::optional<Checkpoint> init;
    if (!options.resume && options.init != "none") init = load_init(options, *output.log);
    create_out_dir(options.out_dir);
    const std::unique_ptr<FolderLock> lock = lock_out_dir(options, *output.log);
    claim_out_dir(options);
    check_writable(options.out_dir);
    if (options.threads > 0) {
        set_num_threads(static_cast<int>(options.threads));
    } else {
        const ThreadChoice choice = choose_thread_count(kMaxThreads);
        set_num_threads(choice.threads);
        *output.log << "threads: auto: the fastest of 1.." << choice.candidates << " ran "
                    << exact_text(std::round(choice.best_speedup * 100) / 100) << "x one thread's speed on a sample of "
                    << "the step; using " << choice.threads << "\n";
    }
    MatmulPrecisionGuard precision(options.precision);
    return Trainer(options, output, std::move(data), init).run();
}

}  // namespace patchgrad
