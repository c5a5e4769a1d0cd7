#include "patchgrad/layers/patch_dropout.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

PatchDropout::PatchDropout(real p, int64_t prefix_tokens, std::shared_ptr<Rng> rng)
    : p(p), prefix_tokens(prefix_tokens), rng(std::move(rng)) {
    check(p >= 0 && p < 1, "PatchDropout: p must be in [0, 1), got ", p);
    check(prefix_tokens >= 0, "PatchDropout: prefix_tokens must be >= 0, got ", prefix_tokens);
    check(p == 0 || this->rng, "PatchDropout: p = ", p, " needs an Rng, got none");
}

int64_t patch_dropout_kept(real p, int64_t n) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::floor((1 - double(p)) * double(n))));
}

Tensor PatchDropout::forward(const Tensor& x) {
    if (!training() || p == 0) return x;
    check(x.dim() == 3 && x.size(1) > prefix_tokens, "PatchDropout: expected tokens [B, ", prefix_tokens,
          " + N, D] with N >= 1, got shape ", x.shape());
    const int64_t B = x.size(0), N = x.size(1) - prefix_tokens, K = patch_dropout_kept(p, N);
    std::vector<int64_t> index;  // [B, prefix + K]: the rows of x each image keeps
    index.reserve(static_cast<size_t>(B * (prefix_tokens + K)));
    std::vector<int64_t> patches(static_cast<size_t>(N));
    for (int64_t b = 0; b < B; ++b) {
        // The first K of a partial Fisher-Yates shuffle: a uniform K-subset of the N patches.
        std::iota(patches.begin(), patches.end(), prefix_tokens);
        for (int64_t i = 0; i < K; ++i)
            std::swap(patches[i], patches[i + static_cast<int64_t>(rng->below(static_cast<uint64_t>(N - i)))]);
        std::sort(patches.begin(), patches.begin() + K);
        for (int64_t t = 0; t < prefix_tokens; ++t) index.push_back(t);
        index.insert(index.end(), patches.begin(), patches.begin() + K);
    }
    return gather_rows(x, index);
}

}  // namespace patchgrad
