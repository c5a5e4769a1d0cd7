// inspect.h — looking inside a ViT, as the paper does in §4.5 "Inspecting Vision
// Transformer": what `patchgrad inspect` draws, as a library.
//
// The numbers and the pictures are kept apart. The analysis functions take plain numbers
// (a Matrix, or the attention maps VisionTransformer::attention_maps returns) and give
// numbers, so the tests check them against hand-made cases:
//
//   cosine_similarity_matrix   position-embedding similarity      paper Fig. 7, centre
//   attention_rollout          attention flow from the input      Abnar & Zuidema (2020), paper Fig. 6
//   mean_attention_distance    how far each head looks, in pixels paper Fig. 7, right
//   principal_components       the main directions of E's filters paper Fig. 7, left
//
// The picture functions draw them with vit/pictures/canvas.h and return the Image; write_inspection
// runs a model on a data set and saves the five PNGs of an inspection into a directory.
//
// Patches are numbered 1..N in the Patcher's row-major order, as the paper's x_p^1..x_p^N:
// patch i is token i of the sequence and row i of the position embedding; token 0 is the
// class token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "patchgrad/autograd/tensor.h"
#include "patchgrad/datasets/image_set.h"
#include "patchgrad/datasets/normalize.h"
#include "patchgrad/vit/pictures/canvas.h"
#include "patchgrad/vit/vision_transformer.h"

namespace patchgrad {

// A dense rows x cols matrix of doubles, row-major: the analysis functions' currency.
struct Matrix {
    int64_t rows = 0, cols = 0;
    std::vector<double> values;  // [rows, cols]

    Matrix() = default;
    Matrix(int64_t rows, int64_t cols, double fill = 0);
    double& operator()(int64_t r, int64_t c) { return values[static_cast<size_t>(r * cols + c)]; }
    double operator()(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
};

// ---- the numbers ---------------------------------------------------------------------

// vectors [n, d] -> S [n, n] with S_ij = <v_i, v_j> / (|v_i| |v_j|): symmetric, 1 on the
// diagonal, in [-1, 1]. Throws std::invalid_argument naming the row if a vector is zero.
Matrix cosine_similarity_matrix(const Matrix& vectors);

// The position embedding of the N patches, E_pos rows 1..N ([N, D], the class token's row 0
// left out): the rows whose similarities the paper's Fig. 7 (centre) shows.
Matrix patch_position_embeddings(const VisionTransformer& model);

// Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"),
// for image `image` of a batch. attention[l] is layer l's A_l [B, heads, T, T] (rows sum to
// 1, as VisionTransformer::attention_maps gives them). Per layer, the heads are averaged and
// the residual connection is accounted for by adding the identity:
//
//   Abar_l = (1 / heads) sum_h A_l,h        Ahat_l = rownorm(Abar_l + I)
//   R      = Ahat_L Ahat_{L-1} ... Ahat_1   [T, T]
//
// R_ij is how much token j of the input flows into token i at the output; row 0, read at
// columns 1..N, is the class token's map over the patches (the paper's Fig. 6 uses this).
// R's rows sum to 1. Identity attention (every token attending only to itself) gives
// Ahat_l = I: a layer of it leaves R unchanged, and L of them give R = I, whose class-token
// row is one-hot on the class token and 0 on every patch.
// Throws std::invalid_argument for no layers, mismatched or non-square shapes, or an image
// index outside the batch.
Matrix attention_rollout(const std::vector<Tensor>& attention, int64_t image);

// The class token's attention to the N patches in head `head` of one layer's A [B, heads,
// T, T], for image `image`: A[image, head, 0, 1..N], [N] (not renormalised: what the class
// token gives to itself is missing from its sum).
std::vector<double> class_token_attention(const Tensor& attention, int64_t image, int64_t head);

// Where the patches are: patch (r, c) of a rows x cols grid of patch x patch pixel squares
// has its centre at (patch (c + 1/2), patch (r + 1/2)) pixels.
struct PatchGrid {
    int64_t rows = 0, cols = 0, patch = 0;
    int64_t size() const { return rows * cols; }
    static PatchGrid of(const ViTConfig& config);
};

// The mean attention distance of every head in pixels, [layers, heads] (paper Fig. 7 right,
// Appendix D.7: "the average distance in image space across which information is
// integrated, weighted by the attention weights"). With c_q the centre of patch q:
//
//   d_bq(l, h) = sum_k A_l[b, h, q, k] |c_q - c_k|  /  sum_k A_l[b, h, q, k]
//   d(l, h)    = mean over the images b of the batch and the query patches q of d_bq(l, h)
//
// with q and k running over the patches only: the class token has no place in the image,
// so it is left out as a query, and as a key its weight is dropped and the rest
// renormalised (a weighted mean). A query whose patch weights sum to 0 has no distance and
// is left out of its image's mean. Uniform attention gives mean_patch_distance(grid).
// Throws std::invalid_argument when a layer's shape is not [B, heads, N+1, N+1] for the grid.
Matrix mean_attention_distance(const std::vector<Tensor>& attention, const PatchGrid& grid);

// The mean of |c_q - c_k| over all N^2 ordered pairs of patches (q = k included): the mean
// attention distance of uniform attention, the reference line of the distance chart.
double mean_patch_distance(const PatchGrid& grid);

// Principal component analysis of the rows of `samples` [n, f]: the eigenvectors of their
// covariance C = (1/n) sum_i (x_i - mean)(x_i - mean)^T [f, f], by the cyclic Jacobi
// method (rotations that zero one off-diagonal entry at a time until C is diagonal; f is
// C*P*P = 48 for patch 4, so the f^3 cost per sweep is nothing). The top `count`
// eigenvalues, largest first, with their unit eigenvectors, each with its largest-magnitude
// entry made positive so that the result does not depend on the solver's signs. Applied to
// E's weight [D, C*P*P] this gives the paper's Fig. 7 (left), "RGB embedding filters (first
// 28 principal components)". Throws std::invalid_argument if count is not in [1, f], there
// are no samples, or a value is not finite.
struct PrincipalComponents {
    Matrix components;              // [count, f], orthonormal rows
    std::vector<double> variance;   // [count], the eigenvalues of C, descending
    std::vector<double> explained;  // [count], variance / trace(C) (0 when trace(C) = 0)
    std::vector<double> mean;       // [f]
};
PrincipalComponents principal_components(const Matrix& samples, int64_t count);

// E, patch_embed.proj.weight [D, C*P*P], as a Matrix: the D embedding filters.
Matrix embedding_filters(const VisionTransformer& model);

// The model in eval mode without a graph, recording attention: images [B, C, H, W] ->
// attention_maps(), one A [B, heads, T, T] per layer. Afterwards the model is back in its
// train/eval mode, with recording off.
std::vector<Tensor> record_attention_maps(VisionTransformer& model, const Tensor& images);

// ---- the pictures --------------------------------------------------------------------

// Image `index` of `set` as an RGB picture (one channel is drawn grey). Throws
// std::invalid_argument for an index out of range or a channel count other than 1 or 3.
Image to_image(const ImageSet& set, int64_t index);

// patches.png (ViT from scratch §2-1): the image enlarged with the patch grid drawn and every patch
// numbered, beside the patches laid out as the token sequence 1..N that the Patcher makes.
Image patches_picture(const Image& image, const PatchGrid& grid, const std::string& caption);

// pos_similarity.png (paper Fig. 7 centre): similarity [N, N] as a grid of grids — the tile
// at patch row r, column c shows the cosine similarity of that patch's position embedding
// with every patch's, laid out like the patches — in the diverging map over [-1, 1], with a
// colour bar. Throws std::invalid_argument unless similarity is [N, N] for the grid.
Image position_similarity_picture(const Matrix& similarity, const PatchGrid& grid, const std::string& caption);

// attention.png: the image, the class token's attention to the patches in every head of the
// last layer, and the attention rollout's class-token row, each overlaid on the image
// (viridis blended over it, every map scaled to its own maximum, which is printed under it).
// attention holds the maps of a batch; `index` picks the image in it.
Image attention_picture(const Image& image, const std::vector<Tensor>& attention, int64_t index, const PatchGrid& grid,
                        const std::string& caption);

// attention_distance.png (paper Fig. 7 right): distance [layers, heads] as a scatter chart,
// one dot per head at its layer (1-based), with the distance of uniform attention as a
// reference line.
Image attention_distance_picture(const Matrix& distance, const PatchGrid& grid, const std::string& caption);

// embedding_filters.png (paper Fig. 7 left): every principal component (f = C*P*P) reshaped
// to [C, P, P] and drawn as an RGB (or grey) tile, each stretched to [0, 255] on its own,
// enlarged, with its share of the variance, 7 to a row.
Image embedding_filters_picture(const PrincipalComponents& pcs, int64_t channels, int64_t patch_size,
                                const std::string& caption);

// ---- an inspection -------------------------------------------------------------------

struct InspectOptions {
    std::string model_name;         // for the captions, e.g. "cifar-tiny, untrained (seed 0)"; empty: the config's
    int64_t image = 0;              // the image of the set to draw
    std::string image_name;         // its caption; empty: "image <index> (<class>)"
    int64_t distance_images = 128;  // the attention distance is averaged over the set's first this many images
    int64_t components = 28;        // principal components of E to draw (at most C*P*P)
    int64_t batch = 32;             // images per forward pass while measuring distances
};

struct Inspection {
    std::vector<std::string> files;  // the PNGs written, in the order below
    Matrix attention_distance;       // [layers, heads], pixels
    PrincipalComponents filters;     // of E
};

// The checks write_inspection makes before drawing anything (the image index, the image
// size against the model's, the options), for a caller to make before it builds the model:
// a ViT-H/14 takes many seconds to build only to be told that CIFAR-10 images are 32x32.
void check_inspection(const ViTConfig& config, const ImageSet& set, const InspectOptions& options);

// Draws the five pictures of `model` for `set` (normalised with `stats`, as in training) and
// writes them to out_dir, created if needed: patches.png, pos_similarity.png, attention.png,
// attention_distance.png, embedding_filters.png. Throws std::invalid_argument
// ("write_inspection: ...") for an image index out of range, images of a size the model does
// not take, non-positive options or a file in out_dir that is not a PNG where a picture goes
// (check_inspection_out), before writing anything; std::runtime_error naming the
// path when out_dir cannot be created or a picture cannot be written.
Inspection write_inspection(VisionTransformer& model, const ImageSet& set, const ChannelStats& stats,
                            const std::string& out_dir, const InspectOptions& options = {});

// Throws std::invalid_argument ("write_inspection: <path> holds something that is not a PNG")
// when one of the five pictures' paths in out_dir holds anything but a PNG, which
// write_inspection would replace; write_inspection checks it too, before drawing.
void check_inspection_out(const std::string& out_dir);

}  // namespace patchgrad
