// broadcast.cpp — the iteration plan of a broadcasting op (broadcast.h).
#include "patchgrad/autograd/broadcast.h"

namespace patchgrad {

Broadcast plan_broadcast(const Shape& a, const Shape& b, const Shape& out) {
    struct Axis {
        int64_t size;
        bool a_moves, b_moves;
    };
    std::vector<Axis> axes;
    const size_t ndim = out.size();
    for (size_t k = 0; k < ndim; ++k) {
        if (out[k] == 1) continue;
        const bool a_moves = k + a.size() >= ndim && a[k + a.size() - ndim] != 1;
        const bool b_moves = k + b.size() >= ndim && b[k + b.size() - ndim] != 1;
        if (!axes.empty() && axes.back().a_moves == a_moves && axes.back().b_moves == b_moves)
            axes.back().size *= out[k];
        else
            axes.push_back({out[k], a_moves, b_moves});
    }
    if (axes.empty()) axes.push_back({1, true, true});  // every operand holds one element

    Broadcast bc;
    for (const Axis& axis : axes) {
        bc.a_whole = bc.a_whole && axis.a_moves;
        bc.b_whole = bc.b_whole && axis.b_moves;
    }
    bc.inner = axes.back().size;
    bc.a_step = axes.back().a_moves;
    bc.b_step = axes.back().b_moves;
    const size_t n_outer = axes.size() - 1;
    bc.outer.resize(n_outer);
    bc.a_stride.resize(n_outer);
    bc.b_stride.resize(n_outer);
    int64_t a_extent = bc.a_step ? bc.inner : 1;  // elements of a spanned by the axes inside
    int64_t b_extent = bc.b_step ? bc.inner : 1;
    for (size_t j = n_outer; j-- > 0;) {
        bc.outer[j] = axes[j].size;
        bc.a_stride[j] = axes[j].a_moves ? a_extent : 0;
        bc.b_stride[j] = axes[j].b_moves ? b_extent : 0;
        if (axes[j].a_moves) a_extent *= axes[j].size;
        if (axes[j].b_moves) b_extent *= axes[j].size;
        bc.rows *= axes[j].size;
    }
    return bc;
}

}  // namespace patchgrad
