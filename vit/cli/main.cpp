// patchgrad — the command-line program. `patchgrad <command> [options]`; each command lives
// in its own file in vit/cli/ and is listed in `commands` below.
#include <iomanip>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "patchgrad/autograd/cpu/bf16/gemm_bf16.h"
#include "patchgrad/autograd/cpu/cpu_isa.h"
#include "patchgrad/autograd/storage.h"
#include "patchgrad/autograd/version.h"
#include "patchgrad/vit/cli/cli.h"

namespace {

struct Command {
    const char* name;
    const char* description;
    int (*run)(const std::vector<std::string>& args);
};

const Command commands[] = {
    {"summary", "print a ViT configuration's layers, output shapes and parameter counts",
     patchgrad::cli::summary_command},
    {"bench", "time training steps of a ViT on random data (img/s, GFLOP/s, memory), or one matmul",
     patchgrad::cli::bench_command},
    {"train", "train a ViT on CIFAR-10 (progress, metrics, plots, checkpoints, --resume)",
     patchgrad::cli::train_command},
    {"eval", "accuracy, per-class accuracy and confusion matrix of a checkpoint on CIFAR-10",
     patchgrad::cli::eval_command},
    {"compare", "several runs' accuracy curves in one chart, against epochs or training compute (TFLOP)",
     patchgrad::cli::compare_command},
    {"predict", "the five most probable classes of your own pictures (PNG, PPM) under a checkpoint",
     patchgrad::cli::predict_command},
    {"inspect", "pictures of a ViT's patches, position embeddings, attention and filters (paper 4.5)",
     patchgrad::cli::inspect_command},
};

void print_usage(std::ostream& os) {
    os << "usage: patchgrad <command> [options]\n"
          "\n"
          "commands:\n";
    for (const Command& c : commands) os << "  " << std::left << std::setw(10) << c.name << c.description << "\n";
    os << "\n"
          "Run 'patchgrad <command> --help' for a command's options, 'patchgrad --version' for the version.\n";
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        print_usage(std::cerr);
        return 2;
    }
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_usage(std::cout);
        return 0;
    }
    if (args[0] == "--version") {
        std::cout << "patchgrad " << patchgrad::kVersion << "\n";
        return 0;
    }
    for (const Command& c : commands) {
        if (args[0] != c.name) continue;
        try {
            // The variables that choose kernels are read before any command runs, so that a
            // misspelt value is an error whatever the command, not only where it would be used.
            patchgrad::active_isa();
            patchgrad::check_bf16_setting();
            return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
        } catch (const patchgrad::cli::UsageError& e) {
            std::cerr << "patchgrad " << c.name << ": " << e.what() << " (see 'patchgrad " << c.name << " --help')\n";
            return 2;
        } catch (const patchgrad::OutOfMemory& e) {
            std::cerr << "patchgrad " << c.name << ": " << e.what() << "\n";  // says how much was asked for
            return 1;
        } catch (const std::bad_alloc&) {
            // Its what() is only "std::bad_alloc"; sizes are checked up front, so this is rare.
            std::cerr << "patchgrad " << c.name << ": out of memory: the system could not give the memory asked for\n";
            return 1;
        } catch (const std::exception& e) {
            std::cerr << "patchgrad " << c.name << ": " << e.what() << "\n";
            return 1;
        }
    }
    std::string known;
    for (const Command& c : commands) known += (known.empty() ? "" : ", ") + std::string(c.name);
    std::cerr << "patchgrad: unknown command '" << args[0] << "' (commands: " << known << "; see 'patchgrad --help')\n";
    return 2;
}
