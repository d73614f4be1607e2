// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Typed errors thrown by the engine. Every message names the operation, the values
// involved and what to do about it; the UI shows the text as it is.
#include <stdexcept>
#include <string>

namespace nns {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Shapes that do not fit together: broadcasting, matmul, view sizes.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A dtype the operation does not accept, or two that do not combine.
class DtypeError : public Error {
 public:
  using Error::Error;
};

// A dimension or index outside its range.
class IndexError : public Error {
 public:
  using Error::Error;
};

// A bad argument value (negative size, probability outside [0, 1], ...).
class ValueError : public Error {
 public:
  using Error::Error;
};

// Misuse of autograd: backward through a freed graph, a non-scalar without a gradient,
// a saved tensor modified in place, ...
class AutogradError : public Error {
 public:
  using Error::Error;
};

// A name that is missing, already taken or not allowed (module members, state-dict keys).
class KeyError : public Error {
 public:
  using Error::Error;
};

// A device that is not available in this build or on this machine.
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace nns
