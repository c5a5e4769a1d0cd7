// unfold.cpp — cutting images into (possibly overlapping) windows, a.k.a. im2col. The ViT
// cuts each image into P x P patches with unfold(x, P, P, P, P) and embeds every patch
// with one linear layer.
#include <stdexcept>
#include <string>

#include "patchgrad/autograd/ops.h"

namespace patchgrad {

// unfold: x [B, C, H, W] -> out [B, C*kh*kw, L], L = OH * OW,
//   OH = (H - kh) / sh + 1, OW = (W - kw) / sw + 1
//   out[b, (c*kh + i)*kw + j, oh*OW + ow] = x[b, c, oh*sh + i, ow*sw + j]
// exactly torch.nn.functional.unfold(x, (kh, kw), stride=(sh, sw)) (padding 0, dilation 1).
// Like torch, when (H - kh) is not a multiple of sh (or W - kw of sw) the last rows
// (columns) that cannot fill another window are dropped.
// [hide:unfold-backward]
// They get a zero gradient; every other pixel gets
//   dx[b, c, oh*sh + i, ow*sw + j] += dOut[b, (c*kh + i)*kw + j, oh*OW + ow]
// summed over every window covering the pixel: with stride < kernel, windows overlap and
// one pixel collects several gradients.
// [/hide:unfold-backward]
Tensor unfold(const Tensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
    check(x.dim() == 4, "unfold: expected a 4-D input [B, C, H, W], got shape ", x.shape());
    check(kh > 0 && kw > 0 && sh > 0 && sw > 0, "unfold: kernel (", kh, ", ", kw, ") and stride (", sh, ", ", sw,
          ") must be positive; input shape ", x.shape());
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    check(kh <= H && kw <= W, "unfold: kernel (", kh, ", ", kw, ") is larger than the image (", H, ", ", W,
          ") of input shape ", x.shape());
    const int64_t OH = (H - kh) / sh + 1, OW = (W - kw) / sw + 1, L = OH * OW;
    const int64_t rows = C * kh * kw;

    Tensor out = Tensor::empty({B, rows, L});
    // [exercise:unfold-forward]
    const real* px = x.data();
    real* py = out.data();
    for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                    const real* src = px + ((b * C + c) * H + i) * W + j;
                    real* dst = py + (b * rows + (c * kh + i) * kw + j) * L;
                    for (int64_t oh = 0; oh < OH; ++oh)
                        for (int64_t ow = 0; ow < OW; ++ow) dst[oh * OW + ow] = src[oh * sh * W + ow * sw];
                }
    // [/exercise:unfold-forward]

    record(out, "unfold", {x}, [x, B, C, H, W, kh, kw, sh, sw, OH, OW, L, rows](Tensor& o) mutable {
        // [exercise:unfold-backward]
        const real* dy = o.grad_data();
        real* dx = x.grad_data();
        for (int64_t b = 0; b < B; ++b)
            for (int64_t c = 0; c < C; ++c)
                for (int64_t i = 0; i < kh; ++i)
                    for (int64_t j = 0; j < kw; ++j) {
                        real* dst = dx + ((b * C + c) * H + i) * W + j;
                        const real* src = dy + (b * rows + (c * kh + i) * kw + j) * L;
                        for (int64_t oh = 0; oh < OH; ++oh)
                            for (int64_t ow = 0; ow < OW; ++ow) dst[oh * sh * W + ow * sw] += src[oh * OW + ow];
                    }
        // [/exercise:unfold-backward]
    });
    return out;
}

}  // namespace patchgrad
