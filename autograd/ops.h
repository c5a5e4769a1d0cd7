// ops.h — every differentiable operation patchgrad has, one line of shapes each.
//
// Each op lives in the .cpp file named after it (matmul in matmul.cpp, softmax in
// softmax.cpp, ...) with its forward and its backward side by side (a vectorised kernel it
// calls, in autograd/cpu/), and its gradient check in tests/autograd/ops/test_<file>.cpp. Shapes are written [B, N, D] etc.; "..." means any
// number of leading dimensions. Every op throws std::invalid_argument naming the op and
// the shapes when its inputs do not fit.
#pragma once

#include <cstdint>
#include <vector>

#include "patchgrad/autograd/enum_names.h"
#include "patchgrad/autograd/rng.h"
#include "patchgrad/autograd/tensor.h"

namespace patchgrad {

// ---- elementwise (elementwise.cpp), NumPy broadcasting ----------------------------------
// Shapes are aligned at the right; a dimension of 1 (or a missing one) stretches to match.
// The result has the broadcast shape; backward sums the gradient over the stretched axes.
Tensor add(const Tensor& a, const Tensor& b);  // a + b
Tensor sub(const Tensor& a, const Tensor& b);  // a - b
Tensor mul(const Tensor& a, const Tensor& b);  // a * b
Tensor div(const Tensor& a, const Tensor& b);  // a / b
Tensor neg(const Tensor& a);                   // -a
Tensor add(const Tensor& a, real s);           // a + s
Tensor mul(const Tensor& a, real s);           // a * s
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor pow(const Tensor& a, real exponent);
Tensor tanh(const Tensor& a);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, real s);
Tensor operator+(real s, const Tensor& a);
Tensor operator-(const Tensor& a, real s);
Tensor operator-(real s, const Tensor& a);
Tensor operator*(const Tensor& a, real s);
Tensor operator*(real s, const Tensor& a);
Tensor operator/(const Tensor& a, real s);
Tensor operator/(real s, const Tensor& a);

// [snippet:broadcast-decls]
// The broadcast shape of two shapes, or an error naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// [shape of a] -> `shape` (a broadcast copy; backward sums back). The class token
// [1, 1, D] becomes [B, 1, D] this way before it is concatenated to the patches.
Tensor broadcast_to(const Tensor& a, const Shape& shape);
// [/snippet:broadcast-decls]

// ---- reductions (reduce.cpp) -----------------------------------------------------------
// [snippet:reduce-decls]
Tensor sum(const Tensor& a);                                      // -> []
Tensor sum(const Tensor& a, int64_t axis, bool keepdim = false);  // axis removed (or kept as 1)
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, int64_t axis, bool keepdim = false);
// Max: the gradient goes to the first position holding the maximum (like torch.max(dim)).
Tensor max(const Tensor& a);
Tensor max(const Tensor& a, int64_t axis, bool keepdim = false);
// [/snippet:reduce-decls]

// ---- shape (shape.cpp) -----------------------------------------------------------------
// New shape with the same number of elements; one entry may be -1 (inferred).
Tensor reshape(const Tensor& a, Shape shape);
// Output axis i is input axis dims[i]; dims is a permutation of 0..ndim-1.
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& a, int64_t axis0, int64_t axis1);
// Joins tensors that agree on every axis but `axis`.
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis);
// Elements start..end-1 along `axis` (Python's a[..., start:end, ...]); negative start/end
// count from the end.
Tensor slice(const Tensor& a, int64_t axis, int64_t start, int64_t end);
// Element `index` along `axis`, which is removed (Python's a[:, index]).
Tensor select(const Tensor& a, int64_t axis, int64_t index);
// a [B, T, ...] -> [B, K, ...]: each batch entry b keeps its own rows index[b*K .. b*K+K-1]
// of its T, in that order (K = index.size() / B; torch: a.gather(1, index[:, :, None].expand(
// -1, -1, D))). PatchDropout keeps each image's random subset of tokens with it.
Tensor gather_rows(const Tensor& a, const std::vector<int64_t>& index);

// ---- matmul (matmul.cpp) ---------------------------------------------------------------
// [..., M, K] @ [..., K, N] -> [..., M, N]; leading dimensions broadcast. Both inputs need
// at least 2 dimensions.
Tensor matmul(const Tensor& a, const Tensor& b);
// alpha * a [..., M, K] @ b [..., N, K]^T -> [..., M, N]: matmul(a, transpose(b, -2, -1)) * alpha
// without copying b^T or the product (attention scores q @ k^T / sqrt(d)).
Tensor matmul_transposed(const Tensor& a, const Tensor& b, real alpha = 1);
// A LayerNorm in front of an op's first product (linear's, mlp's): layer_norm(x, weight, bias,
// eps), computed a block of rows at a time as the product reads them and never stored. `on`
// false (the default): no norm.
struct InputNorm {
    bool on = false;
    Tensor weight, bias;
    real eps = 1e-5;
};
// x [..., in] @ weight[out, in]^T + bias [out] -> [..., out]; bias may be undefined.
// The same as matmul(x, transpose(weight, 0, 1)) + bias, in one pass (linear.cpp). With a
// residual [..., out], the same bits as linear(x, weight, bias) + residual: a transformer
// block's skip connection, added to each block of rows as the product writes it. With a norm,
// the same bits as linear(layer_norm(x, ...), weight, bias, residual): a block's LayerNorm in
// front of its attention's qkv.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual = Tensor(),
              const InputNorm& norm = InputNorm());
// The same from layer_norm, matmul_transposed and +, whose backwards they record (the reference
// in linear's tests).
Tensor linear_through_matmul(const Tensor& x, const Tensor& weight, const Tensor& bias,
                             const Tensor& residual = Tensor(), const InputNorm& norm = InputNorm());

// ---- images to patches (unfold.cpp) ----------------------------------------------------
// [B, C, H, W] -> [B, C*kh*kw, L], L = ((H-kh)/sh + 1) * ((W-kw)/sw + 1); row c*kh*kw +
// i*kw + j of column l holds channel c, pixel (i, j) of the l-th window in row-major window
// order: exactly torch.nn.functional.unfold(x, (kh, kw), stride=(sh, sw)).
Tensor unfold(const Tensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw);

// ---- softmax (softmax.cpp) -------------------------------------------------------------
// exp(x - max) / sum exp(x - max) along `axis`: subtracting the max makes it safe for
// logits in the thousands.
Tensor softmax(const Tensor& x, int64_t axis);
Tensor log_softmax(const Tensor& x, int64_t axis);

// ---- attention (attention.cpp) -----------------------------------------------------------
// qkv [B, N, 3D] as the qkv projection writes it (q, k, v side by side, each `heads` heads of
// d = D / heads) -> [B, N, D], every head's output in its d columns:
//   per image and head  A = softmax(q k^T / sqrt(d) + key_bias) [N, N],  out = A v
// MultiHeadSelfAttention's step-by-step forward in one op, without its permuted copies.
// key_bias [N] (no gradient) is added to every row of scores: -inf hides a key. head_scale
// [heads], when defined, replaces 1/sqrt(d) by a learned scale per head and masks the
// diagonal (LSA). `attention`, when not null, receives a copy of A [B, heads, N, N].
Tensor scaled_dot_product_attention(const Tensor& qkv, int64_t heads, const Tensor& key_bias = Tensor(),
                                    const Tensor& head_scale = Tensor(), Tensor* attention = nullptr);

// ---- layer normalisation (layer_norm.cpp) -----------------------------------------------
// Over the last dimension D: (x - mean) / sqrt(var + eps) * weight + bias, with the biased
// variance like PyTorch. weight and bias are [D] or undefined (then 1 and 0).
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, real eps = 1e-5);

// ---- GELU (gelu.cpp) -------------------------------------------------------------------
enum class GeluApproximation { None, Tanh };
template <>
struct EnumNames<GeluApproximation> {  // as checkpoints spell it
    static constexpr std::pair<GeluApproximation, const char*> table[] = {{GeluApproximation::None, "none"},
                                                                          {GeluApproximation::Tanh, "tanh"}};
};
// None: x * Phi(x) with the exact erf; Tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor& x, GeluApproximation approximation = GeluApproximation::None);

// ---- the MLP of a transformer block (mlp.cpp) --------------------------------------------
// x [..., D] -> linear(gelu(linear(x, fc1_weight, fc1_bias), approximation), fc2_weight,
// fc2_bias) [..., E] in one op, the same bits with fewer passes over memory: GELU and its
// derivative run on rows of the products as gemm finishes them. Biases may be undefined; a
// residual [..., E] is added as linear's is (the same bits as mlp(...) + residual), and a norm
// as linear's (the same bits as mlp(layer_norm(x, ...), ...)).
Tensor mlp(const Tensor& x, const Tensor& fc1_weight, const Tensor& fc1_bias, const Tensor& fc2_weight,
           const Tensor& fc2_bias, GeluApproximation approximation = GeluApproximation::None,
           const Tensor& residual = Tensor(), const InputNorm& norm = InputNorm());
// The same from layer_norm, linear, gelu and linear, whose backwards they record (the reference
// in mlp's tests).
Tensor mlp_through_ops(const Tensor& x, const Tensor& fc1_weight, const Tensor& fc1_bias, const Tensor& fc2_weight,
                       const Tensor& fc2_bias, GeluApproximation approximation = GeluApproximation::None,
                       const Tensor& residual = Tensor(), const InputNorm& norm = InputNorm());

// ---- softplus (softplus.cpp) -----------------------------------------------------------
// x [...] -> log(1 + exp(x)) elementwise, a smooth ReLU; computed without overflow for any x.
// Chapter 3's exercise softplus-gradcheck writes a gradient check for it (gradcheck.h).
Tensor softplus(const Tensor& x);

// ---- cross-entropy (cross_entropy.cpp) --------------------------------------------------
// logits [B, K], labels B integers in [0, K) -> [] the mean over the batch of
// -log softmax(logits)[label]. With label smoothing e the target is (1-e) one-hot + e/K,
// as in torch.nn.functional.cross_entropy(label_smoothing=e).
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& labels, real label_smoothing = 0);

// ---- dropout (dropout.cpp) -------------------------------------------------------------
// Training: zero each element with probability p, scale the rest by 1/(1-p), mask drawn
// from `rng`. Not training (or p == 0): the identity, and no random numbers are drawn.
Tensor dropout(const Tensor& x, real p, bool training, Rng& rng);

// ---- drop_path (drop_path.cpp) -----------------------------------------------------------
// Stochastic depth on x [B, ...]: each sample is kept whole with probability 1 - p (and
// scaled by 1 / (1 - p)) or zeroed whole. x itself when !training or p == 0.
Tensor drop_path(const Tensor& x, real p, bool training, Rng& rng);

}  // namespace patchgrad
