// Private helpers for the HDF5 writers in sim/output (not part of the public interface; includes hdf5.h).
//
//   Hid            owns one hid_t and closes it with the matching H5?close in its destructor.
//   ErrorSilencer  turns off HDF5's automatic error printing for its lifetime (restores it afterwards),
//                  so failures surface as exceptions and not as stderr noise.
//   error_detail() the innermost message of the current HDF5 error stack ("" if none); call it right after
//                  the failing call, before any other HDF5 call clears the stack.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>

namespace clustersim::sim::hdf5 {

/// Move-only owner of an HDF5 identifier.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);

  Hid() = default;
  Hid(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  Hid(Hid&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  Hid& operator=(Hid&& other) noexcept {
    if (this != &other) {
      close();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      closer_ = other.closer_;
    }
    return *this;
  }
  ~Hid() { close(); }

  [[nodiscard]] hid_t get() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }

  /// Closes now; returns the closer's status (0 if nothing was open). Idempotent.
  herr_t close() {
    herr_t rc = 0;
    if (id_ >= 0 && closer_ != nullptr) rc = closer_(id_);
    id_ = H5I_INVALID_HID;
    return rc;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

/// Disables HDF5's automatic error stack printing on this thread while alive.
class ErrorSilencer {
 public:
  ErrorSilencer() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ErrorSilencer(const ErrorSilencer&) = delete;
  ErrorSilencer& operator=(const ErrorSilencer&) = delete;
  ~ErrorSilencer() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// Innermost description on the default error stack, or "" when the stack is empty.
inline std::string error_detail() {
  std::string detail;
  auto walker = [](unsigned n, const H5E_error2_t* err, void* out) -> herr_t {
    if (n == 0 && err != nullptr && err->desc != nullptr) *static_cast<std::string*>(out) = err->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walker, &detail);
  return detail;
}

}  // namespace clustersim::sim::hdf5
