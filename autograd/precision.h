// precision.h — what the matrix products compute in, a library setting like the thread count.
//
// float32 (the default), or bf16 inputs with float32 sums (autograd/cpu/bf16/gemm_bf16.h says
// how and on which CPUs that is faster). gemm() reads the setting at every call.
#pragma once

#include "patchgrad/autograd/enum_names.h"

namespace patchgrad {

enum class MatmulPrecision { Fp32 = 0, Bf16 = 1 };
template <>
struct EnumNames<MatmulPrecision> {  // as --precision spells them
    static constexpr std::pair<MatmulPrecision, const char*> table[] = {{MatmulPrecision::Fp32, "fp32"},
                                                                        {MatmulPrecision::Bf16, "bf16"}};
};

MatmulPrecision matmul_precision();
// Throws std::invalid_argument for bf16 in the float64 build, which exists for gradient
// checks and computes everything in float64.
void set_matmul_precision(MatmulPrecision precision);

// While it lives, matrix products compute in `precision`; the one before comes back after.
class MatmulPrecisionGuard {
public:
    explicit MatmulPrecisionGuard(MatmulPrecision precision) : before_(matmul_precision()) {
        set_matmul_precision(precision);
    }
    ~MatmulPrecisionGuard() { set_matmul_precision(before_); }
    MatmulPrecisionGuard(const MatmulPrecisionGuard&) = delete;
    MatmulPrecisionGuard& operator=(const MatmulPrecisionGuard&) = delete;

private:
    MatmulPrecision before_;
};

}  // namespace patchgrad
