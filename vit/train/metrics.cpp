// metrics.cpp — metrics.csv and metrics.png of a run; see metrics.h.
#include "patchgrad/vit/train/metrics.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "patchgrad/autograd/io/atomic_file.h"
#include "patchgrad/vit/pictures/chart.h"
#include "patchgrad/vit/train/checkpoint.h"

namespace patchgrad {

void write_text_atomically(const std::string& path, const std::string& text) {
    atomic_write(path, "train", [&](std::ostream& out) { out << text; });
}

namespace {

std::string csv_row(const EpochRecord& r) {
    char row[320];
    std::snprintf(row, sizeof row, "%lld,%lld,%.6g,%.6f,%.6f,%s,%.6f,%.6f,%.3f,%.3f,%.1f\n",
                  static_cast<long long>(r.epoch), static_cast<long long>(r.step), r.lr, r.train_loss, r.train_acc,
                  r.eval_set.c_str(), r.eval_loss, r.eval_acc, r.epoch_seconds, r.elapsed_seconds, r.img_per_s);
    return row;
}

EpochRecord parse_csv_row(const std::string& line, const std::string& where) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string field; std::getline(ss, field, ',');) f.push_back(field);
    check(f.size() == 11, where, ": ", f.size(), " fields, expected 11 (", kMetricsHeader, ")");
    EpochRecord r;
    r.epoch = parse_int64(f[0], where, "epoch");
    r.step = parse_int64(f[1], where, "step");
    r.lr = parse_double(f[2], where, "lr");
    r.train_loss = parse_double(f[3], where, "train_loss");
    r.train_acc = parse_double(f[4], where, "train_acc");
    r.eval_set = f[5];
    r.eval_loss = parse_double(f[6], where, "eval_loss");
    r.eval_acc = parse_double(f[7], where, "eval_acc");
    r.epoch_seconds = parse_double(f[8], where, "epoch_seconds");
    r.elapsed_seconds = parse_double(f[9], where, "elapsed_seconds");
    r.img_per_s = parse_double(f[10], where, "img_per_s");
    return r;
}

}  // namespace

void write_metrics_csv(const std::string& path, const std::vector<EpochRecord>& history) {
    std::string text = std::string(kMetricsHeader) + "\n";
    for (const EpochRecord& r : history) text += csv_row(r);
    try {
        write_text_atomically(path, text);
    } catch (const std::runtime_error& e) {
        fail<std::runtime_error>("write_metrics_csv: ", e.what());
    }
}

std::vector<EpochRecord> read_metrics_csv(const std::string& path) {
    std::ifstream in(path);
    check(!in.fail(), "read_metrics_csv: cannot open ", path);
    std::string line;
    check(std::getline(in, line) && line == kMetricsHeader, "read_metrics_csv: ", path,
          ": the first line is not the header ", kMetricsHeader);
    std::vector<EpochRecord> history;
    for (int64_t n = 2; std::getline(in, line); ++n)
        if (!line.empty())
            history.push_back(parse_csv_row(line, "read_metrics_csv: " + path + " line " + std::to_string(n)));
    return history;
}

Series epoch_series(const std::string& name, const std::vector<EpochRecord>& history, double EpochRecord::*field,
                    double scale) {
    Series s;
    s.name = name;
    for (const EpochRecord& r : history) {
        s.x.push_back(double(r.epoch));
        s.y.push_back(r.*field * scale);
    }
    s.points = history.size() == 1;  // a line through one point would not show
    return s;
}

void write_metrics_chart(const std::string& path, const std::vector<EpochRecord>& history) {
    const std::string eval = history.empty() ? "validation" : history.back().eval_set;
    const Image loss = line_chart("loss", "epoch", "cross-entropy",
                                  {epoch_series("train", history, &EpochRecord::train_loss, 1),
                                   epoch_series(eval, history, &EpochRecord::eval_loss, 1)});
    const Image accuracy = line_chart("accuracy", "epoch", "accuracy (%)",
                                      {epoch_series("train", history, &EpochRecord::train_acc, 100),
                                       epoch_series(eval, history, &EpochRecord::eval_acc, 100)});
    save(hconcat({loss, accuracy}, 16), path);
}

}  // namespace patchgrad
