// `patchgrad compare`: several runs' accuracy curves in one chart, against epochs or against
// training compute. Compute (TFLOP: image passes times training_gflop_per_image) is what the
// presets' budgets are counted in (chapter 10.12), so two recipes that spend an epoch
// differently are compared where they have spent the same. Runs of vit/scripts/train_torch.py
// (its metrics.csv) can be drawn beside patchgrad's, against epochs.
//
//   patchgrad compare --runs DIR,DIR,... [--labels A,B,...] [--x epoch|tflop]
//                     [--images-per-epoch N] [--every N] [--title TEXT] [--out FILE.png]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "patchgrad/autograd/check.h"
#include "patchgrad/datasets/cifar10.h"
#include "patchgrad/vit/cli/cli.h"
#include "patchgrad/vit/pictures/chart.h"
#include "patchgrad/vit/pictures/png.h"
#include "patchgrad/vit/summary.h"
#include "patchgrad/vit/train/checkpoint.h"
#include "patchgrad/vit/train/metrics.h"
#include "patchgrad/vit/train/train_options.h"

namespace patchgrad::cli {

namespace {

void print_help() {
    std::cout << "usage: patchgrad compare --runs DIR,DIR,... [--labels A,B,...] [--x epoch|tflop]\n"
                 "                         [--images-per-epoch N] [--every N] [--title TEXT] [--out FILE.png]\n"
                 "\n"
                 "Draws the evaluation accuracy of several runs after every epoch in one chart, and prints a\n"
                 "table of each run's last and best accuracy. A run is the --out folder of 'patchgrad train'\n"
                 "(metrics.csv, last.safetensors), finished or not, or of vit/scripts/train_torch.py\n"
                 "(metrics.csv of its own).\n"
                 "\n"
                 "  --runs DIR,DIR,...     the runs' folders, separated by commas\n"
                 "  --labels A,B,...       their names in the legend (default: the folders' names)\n"
                 "  --x epoch|tflop        what the horizontal axis counts (default: epoch). tflop is the\n"
                 "                         training compute spent by the end of each epoch: image passes times\n"
                 "                         the GFLOP of one (what 'patchgrad bench' prints), read from the run's\n"
                 "                         checkpoint; patchgrad runs only\n"
                 "  --images-per-epoch N   training images per epoch, for --x tflop (default: CIFAR-10's 50,000\n"
                 "                         less the run's --validation, checked against its steps per epoch)\n"
                 "  --every N              also print a Markdown table of each run's accuracy every N epochs\n"
                 "                         and at its last\n"
                 "  --title TEXT           the chart's title (default: \"validation accuracy\")\n"
                 "  --out FILE.png         where the chart goes (default: compare.png); an existing file there\n"
                 "                         is replaced only if it is a PNG\n"
                 "  -h, --help             show this help\n";
}

std::vector<std::string> split_commas(const std::string& flag, const std::string& text) {
    std::vector<std::string> items;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        if (item.empty()) throw UsageError(flag + ": an empty item in '" + text + "'");
        items.push_back(item);
    }
    if (items.empty() || text.back() == ',') throw UsageError(flag + ": an empty item in '" + text + "'");
    return items;
}

// What a run recorded after each epoch, whichever program wrote it.
struct Run {
    std::string dir, label, program;       // program: "patchgrad" or "train_torch.py"
    std::string eval_set;                  // "validation" or "test"
    std::vector<double> epochs, accuracy;  // accuracy as a fraction
    std::vector<int64_t> steps;            // patchgrad: global steps at the end of each epoch
};

// train_torch.py's metrics.csv: one row per epoch, always on the validation split. Python's
// csv module ends its lines with "\r\n".
constexpr const char* kTorchMetricsHeader = "epoch,train_loss,train_acc,val_loss,val_acc,lr,elapsed_s";

std::istream& getline_crlf(std::istream& in, std::string& line) {
    if (std::getline(in, line) && !line.empty() && line.back() == '\r') line.pop_back();
    return in;
}

void read_torch_metrics(std::istream& in, const std::string& path, Run& run) {
    run.program = "train_torch.py";
    run.eval_set = "validation";
    std::string line;
    for (int n = 2; getline_crlf(in, line); ++n) {
        if (line.empty()) continue;
        // Read as metrics.cpp reads patchgrad's rows, with the checkpoint metadata's parsers.
        const std::string where = path + " line " + std::to_string(n);
        std::vector<std::string> cells;
        std::istringstream row(line);
        for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
        check(cells.size() == 7, where, ": ", cells.size(), " fields, expected 7 (", kTorchMetricsHeader, ")");
        const double acc = parse_double(cells[4], where, "val_acc");
        check(std::isfinite(acc), where, ": val_acc '", cells[4], "' is not finite");
        run.epochs.push_back(double(parse_int64(cells[0], where, "epoch")));
        run.accuracy.push_back(acc);
    }
}

Run read_run(const std::string& dir, const std::string& label) {
    Run run;
    run.dir = dir;
    run.label = label;
    const std::string path = dir + "/metrics.csv";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path + " (is " + dir + " the --out folder of a run?)");
    std::string header;
    getline_crlf(in, header);
    if (header == kTorchMetricsHeader) {
        read_torch_metrics(in, path, run);
    } else {
        run.program = "patchgrad";
        for (const EpochRecord& r : read_metrics_csv(path)) {
            if (!run.eval_set.empty() && r.eval_set != run.eval_set)
                throw std::invalid_argument(path + ": epochs evaluated on both " + run.eval_set + " and " + r.eval_set);
            run.eval_set = r.eval_set;
            run.epochs.push_back(double(r.epoch));
            run.accuracy.push_back(r.eval_acc);
            run.steps.push_back(r.step);
        }
    }
    if (run.epochs.empty()) throw std::invalid_argument(path + ": no epoch has finished yet");
    return run;
}

// A run's training compute, from its checkpoint's model and recipe: run_training_tflop (patch
// dropout's cost per pass, every patch's in the last --full-patch-epochs) of the images of an
// epoch. Without --images-per-epoch those are CIFAR-10's 50,000 less the run's validation
// split, which must agree with the steps of batch `batch` that its epochs took.
struct Compute {
    TrainOptions recipe;
    int64_t images_per_epoch = 0;
    double tflop_after(double epochs) const { return run_training_tflop(recipe, epochs, images_per_epoch); }
    // "0.1880 GFLOP", or "0.1880 then 0.7521 GFLOP" when the last epochs see every patch.
    std::string gflop_per_pass() const {
        char text[64];
        if (recipe.full_patch_epochs > 0)
            std::snprintf(text, sizeof text, "%.4f then %.4f GFLOP", training_gflop_per_image(recipe.config),
                          training_gflop_per_image(with_every_patch(recipe.config)));
        else
            std::snprintf(text, sizeof text, "%.4f GFLOP", training_gflop_per_image(recipe.config));
        return text;
    }
};

Compute run_compute(const Run& run, int64_t images_per_epoch) {
    if (run.program != "patchgrad")
        throw UsageError("--x tflop: " + run.dir + " is a " + run.program +
                         " run; its compute is counted from a patchgrad checkpoint's model");
    Compute compute;
    apply_checkpoint_recipe(compute.recipe, load_checkpoint(run.dir + "/last.safetensors"));
    const TrainOptions& recipe = compute.recipe;
    if (images_per_epoch == 0) {
        const int64_t train_images = kCifar10RecordsPerFile * int64_t(kCifar10TrainFiles.size()) - recipe.validation;
        const int64_t steps_per_epoch = (train_images + recipe.batch - 1) / recipe.batch;
        const int64_t epoch = int64_t(run.epochs.back());
        if (run.steps.back() != epoch * steps_per_epoch)
            throw std::invalid_argument(
                run.dir + ": " + std::to_string(epoch) + " epochs took " + std::to_string(run.steps.back()) +
                " steps of batch " + std::to_string(recipe.batch) + ", not the " +
                std::to_string(epoch * steps_per_epoch) + " of CIFAR-10's " + std::to_string(train_images) +
                " training images; give the run's --images-per-epoch");
        images_per_epoch = train_images;
    }
    compute.images_per_epoch = images_per_epoch;
    return compute;
}

std::string percent(double fraction, int decimals = 2) {
    char text[16];
    std::snprintf(text, sizeof text, "%.*f%%", decimals, 100 * fraction);
    return text;
}

// | epoch | 10 | 20 | ... | with a row per run: its accuracy after every `every` epochs and
// after its last, blank where a run has not got that far.
void print_markdown_table(const std::vector<Run>& runs, int64_t every) {
    std::vector<double> epochs;
    for (const Run& r : runs) {
        for (double e = double(every); e <= r.epochs.back(); e += double(every)) epochs.push_back(e);
        epochs.push_back(r.epochs.back());
    }
    std::sort(epochs.begin(), epochs.end());
    epochs.erase(std::unique(epochs.begin(), epochs.end()), epochs.end());
    std::cout << "\n| epoch |";
    for (double e : epochs) std::cout << " " << e << " |";
    std::cout << "\n|---|";
    for (size_t i = 0; i < epochs.size(); ++i) std::cout << "---|";
    for (const Run& r : runs) {
        std::cout << "\n| " << r.label << " |";
        for (double e : epochs) {
            const auto at = std::find(r.epochs.begin(), r.epochs.end(), e);
            std::cout << " " << (at == r.epochs.end() ? "" : percent(r.accuracy[at - r.epochs.begin()], 1)) << " |";
        }
    }
    std::cout << "\n";
}

}  // namespace

int compare_command(const std::vector<std::string>& args) {
    const Flags flags =
        parse_flags(args, {"--runs", "--labels", "--x", "--images-per-epoch", "--every", "--title", "--out"});
    if (flags.help) {
        print_help();
        return 0;
    }
    if (!flags.given("--runs")) throw UsageError("--runs DIR,DIR,... is required");
    const std::vector<std::string> dirs = split_commas("--runs", flags.values.at("--runs"));
    std::vector<std::string> labels;
    if (flags.given("--labels")) {
        labels = split_commas("--labels", flags.values.at("--labels"));
        if (labels.size() != dirs.size())
            throw UsageError("--labels names " + std::to_string(labels.size()) + " runs, --runs has " +
                             std::to_string(dirs.size()));
    } else {
        for (const std::string& d : dirs) {
            const size_t end = d.find_last_not_of('/');
            const std::string trimmed = end == std::string::npos ? d : d.substr(0, end + 1);
            labels.push_back(trimmed.substr(trimmed.find_last_of('/') + 1));
        }
    }
    const std::string x = flags.value_or("--x", "epoch");
    if (x != "epoch" && x != "tflop") throw UsageError("--x must be epoch or tflop, got '" + x + "'");
    const int64_t images_per_epoch =
        flags.given("--images-per-epoch")
            ? parse_positive_int("--images-per-epoch", flags.values.at("--images-per-epoch"))
            : 0;
    if (images_per_epoch > 0 && x != "tflop") throw UsageError("--images-per-epoch counts compute, for --x tflop");
    const int64_t every = flags.given("--every") ? parse_positive_int("--every", flags.values.at("--every")) : 0;
    const std::string out = flags.value_or("--out", "compare.png");
    const std::string extension = out.size() >= 4 ? out.substr(out.size() - 4) : "";
    if (extension != ".png" && extension != ".PNG") throw UsageError("--out must name a .png file, got '" + out + "'");
    const std::string problem = png_replace_problem(out);
    if (!problem.empty())
        throw std::invalid_argument("--out " + out + " " + problem +
                                    ": compare replaces only a PNG; choose another --out");

    std::vector<Run> runs;
    for (size_t i = 0; i < dirs.size(); ++i) runs.push_back(read_run(dirs[i], labels[i]));
    for (const Run& r : runs)
        if (r.eval_set != runs[0].eval_set)
            throw std::invalid_argument("the runs evaluated different images: " + runs[0].dir + " its " +
                                        runs[0].eval_set + " split, " + r.dir + " its " + r.eval_set + " split");
    const std::string title = flags.given("--title") ? flags.values.at("--title") : runs[0].eval_set + " accuracy";

    std::vector<Series> series;
    std::cout << "run: epochs, " << (x == "tflop" ? "GFLOP per image pass, TFLOP spent, " : "") << runs[0].eval_set
              << " accuracy last and best (epoch)\n";
    for (const Run& r : runs) {
        const std::optional<Compute> compute =
            x == "tflop" ? std::optional<Compute>(run_compute(r, images_per_epoch)) : std::nullopt;
        Series s;
        s.name = r.label;
        size_t best = 0;
        for (size_t i = 0; i < r.epochs.size(); ++i) {
            s.x.push_back(compute ? compute->tflop_after(r.epochs[i]) : r.epochs[i]);
            s.y.push_back(100 * r.accuracy[i]);
            if (r.accuracy[i] > r.accuracy[best]) best = i;
        }
        s.points = r.epochs.size() == 1;  // a line through one point would not show
        series.push_back(s);
        std::cout << "  " << r.label << " (" << r.dir << ", " << r.program << "): " << r.epochs.back();
        if (compute) {
            char text[32];
            std::snprintf(text, sizeof text, ", %.1f TFLOP", compute->tflop_after(r.epochs.back()));
            std::cout << ", " << compute->gflop_per_pass() << text;
        }
        std::cout << ", " << percent(r.accuracy.back()) << " and " << percent(r.accuracy[best]) << " ("
                  << r.epochs[best] << ")\n";
    }
    if (every > 0) print_markdown_table(runs, every);
    save(line_chart(title, x == "tflop" ? "training compute (TFLOP)" : "epoch", "accuracy (%)", series, 800, 480), out);
    std::cout << "wrote " << out << "\n";
    return 0;
}

}  // namespace patchgrad::cli
