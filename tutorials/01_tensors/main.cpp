// tutorial_01_tensors — the program of chapter 1, tensors.
//
// It takes a patchgrad Tensor apart: one contiguous buffer plus a shape, the row-major
// index arithmetic (strides), which results share their input's memory (reshape, select of
// the first axis) and which copy (permute, transpose, select of a later axis), NumPy
// broadcasting and where each output element reads its operands, reductions along an axis
// seen as [outer, n, inner], and why the library is built twice (float and double).
// Float64, no randomness: the printed numbers are the same on every machine. This chapter
// draws no pictures; --out is accepted like every chapter's.
#include <cstdint>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "patchgrad/autograd/ops.h"
#include "tutorials/tutorial.h"

using namespace patchgrad;

namespace {

// [snippet:strides]
// Row-major strides: how many elements one step along each axis skips.
// [2, 3, 4] -> [12, 4, 1]: the last axis is contiguous, each earlier axis jumps over a whole
// block of the axes after it.
Shape row_major_strides(const Shape& shape) {
    Shape strides(shape.size(), 1);
    for (size_t k = shape.size(); k-- > 1;) strides[k - 1] = strides[k] * shape[k];
    return strides;
}

// Element (i0, i1, ..., ik) lives at offset i0 * stride0 + i1 * stride1 + ... + ik * 1.
int64_t offset_of(const Shape& strides, const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) offset += index[k] * strides[k];
    return offset;
}
// [/snippet:strides]

// [snippet:broadcast-source]
// Where output position `index` (of the broadcast shape) reads an operand of shape `s`:
// align s at the right; an axis of size 1 (or a missing one) always reads element 0.
int64_t broadcast_source(const Shape& s, const std::vector<int64_t>& index) {
    const size_t shift = index.size() - s.size();  // s's axis k is the output's axis k + shift
    const Shape strides = row_major_strides(s);
    int64_t offset = 0;
    for (size_t k = 0; k < s.size(); ++k)
        if (s[k] != 1) offset += index[k + shift] * strides[k];
    return offset;
}
// [/snippet:broadcast-source]

std::string index_str(const std::vector<int64_t>& index) {
    std::string s = "(";
    for (size_t k = 0; k < index.size(); ++k) s += (k ? ", " : "") + std::to_string(index[k]);
    return s + ")";
}

// Where `t`'s elements start in the memory of `base`, or -1 if t has memory of its own.
// (A view's data() points into its base's buffer; a copy's points elsewhere.)
int64_t shared_offset(const Tensor& t, const Tensor& base) {
    const real* p = t.data();
    const real* b = base.data();
    for (int64_t i = 0; i < base.numel(); ++i)
        if (p == b + i) return i;
    return -1;
}

void say_shared(const std::string& name, const Tensor& t, const Tensor& base) {
    const int64_t at = shared_offset(t, base);
    std::cout << name << ": shape " << shape_str(t.shape()) << ", "
              << (at >= 0 ? "shares t's memory from element " + std::to_string(at) : std::string("a copy")) << "\n";
}

void storage_and_shape() {
    tutorial::heading("1. storage and shape");
    // [snippet:arange-reshape]
    Tensor t = reshape(Tensor::arange(0, 24), {2, 3, 4});  // the numbers 0..23 seen as 2 x 3 x 4
    // [/snippet:arange-reshape]
    std::cout << "t = " << t << "\n";
    std::cout << "t.numel() = " << t.numel() << ", t.dim() = " << t.dim() << ", t.size(-1) = " << t.size(-1) << "\n";

    tutorial::heading("2. row-major layout: from an index to an offset");
    const Shape strides = row_major_strides(t.shape());
    std::cout << "row-major strides of " << shape_str(t.shape()) << ": " << shape_str(strides) << "\n";
    const std::vector<int64_t> index = {1, 2, 3};
    std::cout << "element " << index_str(index) << " is at offset 1*12 + 2*4 + 3*1 = " << offset_of(strides, index)
              << "; t.at({1, 2, 3}) = " << t.at({1, 2, 3}) << ", t.data()[23] = " << t.data()[23] << "\n";
    std::cout << "the whole buffer, in memory order:";
    for (real v : t.to_vector()) std::cout << " " << v;
    std::cout << "\n";
}

void views_and_copies() {
    tutorial::heading("3. views share memory, permutes copy");
    Tensor t = reshape(Tensor::arange(0, 24), {2, 3, 4});
    // [snippet:views]
    Tensor r = reshape(t, {6, 4});   // the same 24 elements in the same order: a view
    Tensor s = select(t, 0, 1);      // t[1]: elements 12..23, one contiguous run: a view
    Tensor c = select(t, 1, 0);      // t[:, 0]: elements 0..3 and 12..15, two runs: a copy
    Tensor p = transpose(t, 1, 2);   // [2, 4, 3]: a new order of the elements: a copy
    Tensor q = reshape(p, {2, 12});  // a view of p (p is contiguous, like every tensor)
    // [/snippet:views]
    say_shared("r = reshape(t, {6, 4})", r, t);
    say_shared("s = select(t, 0, 1)", s, t);
    say_shared("c = select(t, 1, 0)", c, t);
    say_shared("p = transpose(t, 1, 2)", p, t);
    std::cout << "q = reshape(p, {2, 12}): shape " << shape_str(q.shape()) << ", "
              << (shared_offset(q, p) == 0 ? "shares p's memory" : "a copy") << "\n";
    std::cout << "p = " << p << "\n";

    r.at({5, 3}) = -1;  // write through the view ...
    std::cout << "after r.at({5, 3}) = -1: t.at({1, 2, 3}) = " << t.at({1, 2, 3}) << ", s.at({2, 3}) = " << s.at({2, 3})
              << ", but the copy p.at({1, 3, 2}) = " << p.at({1, 3, 2}) << "\n";
}

void broadcasting() {
    tutorial::heading("4. broadcasting");
    // [snippet:broadcast-examples]
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor bias = Tensor::from_vector({3}, {10, 20, 30});     // [3]    -> each row
    Tensor column = Tensor::from_vector({2, 1}, {100, 200});  // [2, 1] -> each column
    std::cout << "x + bias       = " << x + bias << "\n";
    std::cout << "x + column     = " << x + column << "\n";
    std::cout << "column + bias  = " << column + bias << "\n";          // [2, 1] + [3] -> [2, 3]
    std::cout << "x * scalar(2)  = " << x * Tensor::scalar(2) << "\n";  // [] stretches everywhere
    // [/snippet:broadcast-examples]

    std::cout << "\nwhere each element of column + bias reads its operands:\n";
    const Shape out = broadcast_shapes(column.shape(), bias.shape(), "add");
    for (int64_t i = 0; i < out[0]; ++i)
        for (int64_t j = 0; j < out[1]; ++j) {
            const std::vector<int64_t> index = {i, j};
            const int64_t ia = broadcast_source(column.shape(), index), ib = broadcast_source(bias.shape(), index);
            std::cout << "  out" << index_str(index) << " = column[" << ia << "] + bias[" << ib
                      << "] = " << column.data()[ia] << " + " << bias.data()[ib] << "\n";
        }

    std::cout << "\nbroadcast_shapes, aligned at the right:\n";
    const std::vector<std::pair<Shape, Shape>> pairs = {
        {{2, 3}, {3}}, {{2, 1}, {3}}, {{8, 1, 6, 1}, {7, 1, 5}}, {{4, 1, 16}, {1, 1, 16}}, {{4, 65, 16}, {}}};
    for (const auto& [a, b] : pairs)
        std::cout << "  " << shape_str(a) << " with " << shape_str(b) << " -> "
                  << shape_str(broadcast_shapes(a, b, "add")) << "\n";
    try {
        broadcast_shapes({2, 3}, {2}, "add");
    } catch (const std::invalid_argument& e) {
        std::cout << "  [2, 3] with [2] -> error: " << e.what() << "\n";
    }
}

void reductions() {
    tutorial::heading("5. reductions along an axis");
    Tensor t = reshape(Tensor::arange(0, 24), {2, 3, 4});
    for (int64_t axis = 0; axis < 3; ++axis) {
        int64_t outer = 1, inner = 1;
        for (int64_t k = 0; k < axis; ++k) outer *= t.size(k);
        for (int64_t k = axis + 1; k < 3; ++k) inner *= t.size(k);
        std::cout << "sum(t, " << axis << "): [outer " << outer << ", n " << t.size(axis) << ", inner " << inner
                  << "] -> " << sum(t, axis) << "\n";
    }
    std::cout << "sum(t, -1, /*keepdim=*/true).shape() = " << shape_str(sum(t, -1, true).shape()) << "\n";
    std::cout << "mean(t) = " << mean(t) << ", max(t, 1) = " << max(t, 1) << "\n";
}

void float_and_double() {
    tutorial::heading("6. float and double");
    std::cout << "this program links patchgrad_vit64: real is " << (sizeof(real) == 8 ? "double" : "float") << " ("
              << sizeof(real) << " bytes)\n";
    std::cout.precision(15);
    std::cout << "machine epsilon: float " << std::numeric_limits<float>::epsilon() << ", double "
              << std::numeric_limits<double>::epsilon() << "\n";
    // [snippet:float-sum]
    float f = 0;
    double d = 0;
    for (int i = 0; i < 1000000; ++i) {
        f += 0.1f;
        d += 0.1;
    }
    // [/snippet:float-sum]
    std::cout << "0.1 added a million times: float " << f << ", double " << d << "\n";
    std::cout << "1 + 1e-8: float " << (1.0f + 1e-8f == 1.0f ? "== 1" : "!= 1") << ", double "
              << (1.0 + 1e-8 == 1.0 ? "== 1" : "!= 1") << "\n";
    std::cout.precision(6);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        tutorial::out_dir(argc, argv, "tutorial_01_tensors");  // no pictures in this chapter
        storage_and_shape();
        views_and_copies();
        broadcasting();
        reductions();
        float_and_double();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
