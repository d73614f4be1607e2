// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// exp for Eigen array expressions that gives 0 for inputs far below zero, -inf included.
// Eigen 3.4's SSE pexp clamps its input at its lowest exact point (-88.38 for float, -709.4 for
// double), so exp(-inf) comes out 2.9e-39 instead of 0 in builds without AVX (the softmax of a
// masked score, exp of -inf); below that point the true value is a denormal or 0, and 0 is what
// this gives.
//
//   y = x.unaryExpr(nns::cpu::ExpOp<T>{});
#include <Eigen/Core>
#include <cmath>
#include <type_traits>

namespace nns::cpu {

template <class T>
struct ExpOp {
  // Eigen's clamp of pexp's input (Eigen/src/Core/arch/Default/GenericPacketMathFunctions.h).
  static constexpr T kLowest = sizeof(T) == 4 ? T(-88.3762626647949) : T(-709.436139303);
  T operator()(T x) const { return std::exp(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
#if defined(EIGEN_VECTORIZE_AVX512)
    // The same bits with AVX-512's mask registers: a compare and a zeroing move, where the
    // generic form turns the compare's mask into a vector first (a few percent of sigmoid).
    using Traits = unpacket_traits<P>;
    if constexpr (std::is_same_v<typename Traits::type, float> && Traits::size == 16) {
      return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, pset1<P>(kLowest), _CMP_NLT_UQ), pexp(x));
    } else if constexpr (std::is_same_v<typename Traits::type, double> && Traits::size == 8) {
      return _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(x, pset1<P>(kLowest), _CMP_NLT_UQ), pexp(x));
    }
#endif
    return pandnot(pexp(x), pcmp_lt(x, pset1<P>(kLowest)));
  }
};

}  // namespace nns::cpu

namespace Eigen::internal {
template <class T>
struct functor_traits<nns::cpu::ExpOp<T>> {
  enum {
    Cost = functor_traits<scalar_exp_op<T>>::Cost + 2 * NumTraits<T>::AddCost,
    PacketAccess = packet_traits<T>::HasExp && packet_traits<T>::HasCmp
  };
};
}  // namespace Eigen::internal
