// metrics.h — a run's per-epoch record: metrics.csv (written each epoch, read back on
// --resume) and the chart metrics.png of its loss and accuracy curves (drawn with
// vit/pictures/chart.h, which only metrics.cpp and the users of epoch_series include).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace patchgrad {

struct Series;  // vit/pictures/chart.h, which callers of epoch_series include

// One row of metrics.csv. Accuracies are fractions; eval_set is "validation" or "test".
struct EpochRecord {
    int64_t epoch = 0;  // 1-based
    int64_t step = 0;   // global optimizer steps at the end of the epoch
    double lr = 0;      // the learning rate of the epoch's last step
    // The loss the optimizer saw (label smoothing and mixing included, so it sits above the
    // plain eval_loss) and the accuracy on the augmented batches, mixed ones counted by lambda.
    double train_loss = 0, train_acc = 0;
    std::string eval_set;
    double eval_loss = 0, eval_acc = 0;
    double epoch_seconds = 0;    // training and evaluation of this epoch
    double elapsed_seconds = 0;  // of the whole run, resumes included
    double img_per_s = 0;        // training images per second of training time
};

constexpr const char* kMetricsHeader =
    "epoch,step,lr,train_loss,train_acc,eval_set,eval_loss,eval_acc,epoch_seconds,elapsed_seconds,img_per_s";

// Atomic writes (temporary file, then rename); std::runtime_error naming the path on failure.
void write_metrics_csv(const std::string& path, const std::vector<EpochRecord>& history);
void write_metrics_chart(const std::string& path, const std::vector<EpochRecord>& history);
// One curve of that chart: field * scale against the epoch (scale 100 for accuracies in %).
Series epoch_series(const std::string& name, const std::vector<EpochRecord>& history, double EpochRecord::*field,
                    double scale);
// Throws std::invalid_argument naming the path and line for a file not written by
// write_metrics_csv.
std::vector<EpochRecord> read_metrics_csv(const std::string& path);

// `text` into `path` atomically (autograd/io/atomic_file.h); std::runtime_error naming the path.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace patchgrad
