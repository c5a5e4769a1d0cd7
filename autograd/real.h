// real.h — the scalar type of the whole library.
//
// Every library is compiled twice from the same sources (CMakeLists.txt, patchgrad_module):
// patchgrad_X with `real` = float, for training, and patchgrad_X64 with `real` = double
// (PATCHGRAD_DOUBLE), for gradient checks, which need float64's precision to tell a wrong
// derivative from rounding. The top of tensor.h says more.
#pragma once

namespace patchgrad {

// [snippet:real]
#ifdef PATCHGRAD_DOUBLE
using real = double;
#else
using real = float;
#endif
// [/snippet:real]

}  // namespace patchgrad
