#include "patchgrad/layers/feed_forward.h"

#include <stdexcept>
#include <string>

namespace patchgrad {

// int(dim * mlp_ratio) truncates exactly like timm's Mlp, so both build the same shapes. The
// ratio is a double, as in Python, in the float32 build too: 2.6 as a float is 2.5999999, and
// 640 of it truncate to 1663, where timm has 1664. (ViT from scratch's ViTBlock loses the
// mlp_ratio path: chapter 8.)
// [snippet:mlp-hidden-dim]
int64_t mlp_hidden_dim(int64_t dim, int64_t mlp_dim, double mlp_ratio) {
    if (mlp_dim > 0) return mlp_dim;
    const int64_t hidden = static_cast<int64_t>(double(dim) * mlp_ratio);
    check(hidden > 0, "mlp_hidden_dim: give mlp_dim > 0 or mlp_ratio > 0 (got dim ", dim, ", mlp_dim ", mlp_dim,
          ", mlp_ratio ", mlp_ratio, ")");
    return hidden;
}
// [/snippet:mlp-hidden-dim]

FeedForward::FeedForward(int64_t dim, int64_t hidden_dim, Rng& init, std::shared_ptr<Rng> dropout_rng, real dropout,
                         GeluApproximation approximation) {
    fc1 = register_module("fc1", std::make_shared<Linear>(dim, hidden_dim, init));
    act = register_module("act", std::make_shared<GELU>(approximation));
    drop1 = register_module("drop1", std::make_shared<Dropout>(dropout, dropout_rng));
    fc2 = register_module("fc2", std::make_shared<Linear>(hidden_dim, dim, init));
    drop2 = register_module("drop2", std::make_shared<Dropout>(dropout, dropout_rng));
}

// [snippet:mlp-forward]
Tensor FeedForward::forward(const Tensor& x) {
    if (fused && !drop1->active())  // the same values, fewer passes (chapter 12)
        return drop2->forward(mlp(x, fc1->weight, fc1->bias, fc2->weight, fc2->bias, act->approximation));
    const Tensor hidden = drop1->forward(act->forward(fc1->forward(x)));  // [..., D] -> [..., F]
    return drop2->forward(fc2->forward(hidden));                          // [..., F] -> [..., D]
}
// [/snippet:mlp-forward]

Tensor FeedForward::forward_plus(const Tensor& x, const Tensor& residual, LayerNorm* norm) {
    if (fused && !drop1->active() && !drop2->active())
        return mlp(x, fc1->weight, fc1->bias, fc2->weight, fc2->bias, act->approximation, residual,
                   norm ? norm->in_front() : InputNorm());
    return forward(norm ? norm->forward(x) : x) + residual;
}

}  // namespace patchgrad
