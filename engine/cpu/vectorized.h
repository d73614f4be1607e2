// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A SIMD vector of float or double (Eigen's packet of the build's widest instruction set)
// with the operators and functions a formula of engine/backend/elementwise_formulas.h uses,
// so that the CPU runs the same formula on a packet at a time, as PyTorch's at::vec::Vectorized:
//
//   const auto y = ew::Sigmoid<float>{}(Vectorized<float>::load(x));  // 16 floats on AVX-512
//   y.store(out);
//
// Comparisons give a Mask for select(); each operation gives the bits the scalar formula
// gives (exp, log: Eigen's, within a unit in the last place of the C library's).
#include <Eigen/Core>

#include <type_traits>

#include "engine/cpu/exp_op.h"

namespace nns::cpu {

template <class T>
constexpr bool has_vectorized = [] {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    using Traits = Eigen::internal::packet_traits<T>;
    return Traits::Vectorizable && Traits::HasExp && Traits::HasLog && Traits::HasCmp &&
           Traits::HasDiv;
  } else {
    return false;
  }
}();

template <class T>
struct Mask {
  typename Eigen::internal::packet_traits<T>::type bits;  // all ones where true
};

template <class T>
struct Vectorized {
  using Packet = typename Eigen::internal::packet_traits<T>::type;
  static constexpr int kSize = Eigen::internal::unpacket_traits<Packet>::size;

  Packet v;

  Vectorized() = default;
  explicit Vectorized(T x) : v(Eigen::internal::pset1<Packet>(x)) {}
  static Vectorized of(Packet p) {
    Vectorized r;
    r.v = p;
    return r;
  }
  static Vectorized load(const T* p) { return of(Eigen::internal::ploadu<Packet>(p)); }
  void store(T* p) const { Eigen::internal::pstoreu(p, v); }
};

template <class T>
Vectorized<T> operator+(Vectorized<T> a, Vectorized<T> b) {
  return Vectorized<T>::of(Eigen::internal::padd(a.v, b.v));
}
template <class T>
Vectorized<T> operator-(Vectorized<T> a, Vectorized<T> b) {
  return Vectorized<T>::of(Eigen::internal::psub(a.v, b.v));
}
template <class T>
Vectorized<T> operator*(Vectorized<T> a, Vectorized<T> b) {
  return Vectorized<T>::of(Eigen::internal::pmul(a.v, b.v));
}
template <class T>
Vectorized<T> operator/(Vectorized<T> a, Vectorized<T> b) {
  return Vectorized<T>::of(Eigen::internal::pdiv(a.v, b.v));
}
template <class T>
Vectorized<T> operator-(Vectorized<T> a) {
  return Vectorized<T>::of(Eigen::internal::pnegate(a.v));
}

template <class T>
Mask<T> operator<(Vectorized<T> a, Vectorized<T> b) {
  return {Eigen::internal::pcmp_lt(a.v, b.v)};
}
template <class T>
Mask<T> operator<=(Vectorized<T> a, Vectorized<T> b) {
  return {Eigen::internal::pcmp_le(a.v, b.v)};
}
template <class T>
Mask<T> operator&(Mask<T> a, Mask<T> b) {
  return {Eigen::internal::pand(a.bits, b.bits)};
}

// where ? a : b, lane by lane.
template <class T>
Vectorized<T> select(Mask<T> where, Vectorized<T> a, Vectorized<T> b) {
  return Vectorized<T>::of(Eigen::internal::pselect(where.bits, a.v, b.v));
}

template <class T>
Vectorized<T> abs(Vectorized<T> x) {
  return Vectorized<T>::of(Eigen::internal::pabs(x.v));
}
// exp_op.h's exp: 0 far below zero, as the C library's.
template <class T>
Vectorized<T> exp(Vectorized<T> x) {
  return Vectorized<T>::of(ExpOp<T>{}.packetOp(x.v));
}
template <class T>
Vectorized<T> log(Vectorized<T> x) {
  return Vectorized<T>::of(Eigen::internal::plog(x.v));
}
// The instruction's exactly rounded square root: Eigen's psqrt is that without
// EIGEN_FAST_MATH, although its AVX-512 traits (HasSqrt) do not say so.
template <class T>
Vectorized<T> sqrt(Vectorized<T> x) {
  return Vectorized<T>::of(Eigen::internal::psqrt(x.v));
}

}  // namespace nns::cpu
