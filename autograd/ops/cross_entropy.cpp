// cross_entropy.cpp — the classification loss, fused with its log-softmax.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

// logits [B, K], labels B integers in [0, K) -> loss []
//   target t = (1 - e) one_hot(label) + e / K          (e = label_smoothing)
//   loss = mean over rows of -sum_j t_j log softmax(logits)_j = mean of (lse - sum_j t_j logits_j)
//   with lse = max + log sum_j exp(logits_j - max)
// [hide:cross-entropy-backward]
//   dlogits = (softmax(logits) - t) / B * dloss
// [/hide:cross-entropy-backward]
// Fusing the two ops avoids the log of a softmax that underflowed to 0. Everything is
// computed relative to the row max (logits - max is exact for nearby logits), so logits in
// the thousands lose no precision. The forward saves max and log sum exp(logits - max) per row.
// [hide:cross-entropy-backward]
// The backward recomputes softmax = exp((logits - max) - log_sum).
// [/hide:cross-entropy-backward]
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& labels, real label_smoothing) {
    check(logits.dim() == 2, "cross_entropy: logits must be [B, K], got shape ", logits.shape());
    const int64_t B = logits.size(0), K = logits.size(1);
    check(static_cast<int64_t>(labels.size()) == B, "cross_entropy: ", labels.size(), " labels for logits of shape ",
          logits.shape(), " (need one per row)");
    check(B > 0, "cross_entropy: the mean over an empty batch is undefined (logits ", logits.shape(), ")");
    for (int64_t b = 0; b < B; ++b)
        check(labels[b] >= 0 && labels[b] < K, "cross_entropy: label ", labels[b], " at position ", b,
              " is outside [0, ", K, ") for logits of shape ", logits.shape());
    if (!(label_smoothing >= 0 && label_smoothing < 1)) {
        std::ostringstream msg;
        msg << "cross_entropy: label_smoothing must be in [0, 1), got " << label_smoothing << " (logits "
            << shape_str(logits.shape()) << ")";
        throw std::invalid_argument(msg.str());
    }

    const real e = label_smoothing;
    const real uniform = e / static_cast<real>(K);  // the smoothing mass of every class
    std::vector<real> max(B), log_sum(B);
    real total = 0;
    // [snippet:cross-entropy-forward]
    for (int64_t b = 0; b < B; ++b) {
        const real* z = logits.data() + b * K;
        real m = -std::numeric_limits<real>::infinity();
        for (int64_t j = 0; j < K; ++j) m = std::max(m, z[j]);
        real sum_exp = 0, sum_shifted = 0;
        for (int64_t j = 0; j < K; ++j) {
            sum_exp += std::exp(z[j] - m);
            sum_shifted += z[j] - m;
        }
        max[b] = m;
        log_sum[b] = std::log(sum_exp);
        total += log_sum[b] - (1 - e) * (z[labels[b]] - m) - uniform * sum_shifted;
    }
    // [/snippet:cross-entropy-forward]
    Tensor out = Tensor::scalar(total / static_cast<real>(B));

    record(out, "cross_entropy", {logits},
           [logits, labels, B, K, e, uniform, max = std::move(max), log_sum = std::move(log_sum)](Tensor& o) mutable {
               // [exercise:cross-entropy-backward]
               const real scale = o.grad_data()[0] / static_cast<real>(B);
               real* dlogits = logits.grad_data();
               for (int64_t b = 0; b < B; ++b) {
                   const real* z = logits.data() + b * K;
                   real* dz = dlogits + b * K;
                   for (int64_t j = 0; j < K; ++j) dz[j] += (std::exp((z[j] - max[b]) - log_sum[b]) - uniform) * scale;
                   dz[labels[b]] -= (1 - e) * scale;
               }
               // [/exercise:cross-entropy-backward]
           });
    return out;
}

}  // namespace patchgrad
