// Kubernetes resource quantities ("8Gi", "500m", "1e3", "1.5G"), parsed exactly as kube-apiserver
// does and held in integer milli-units, so sums and comparisons never go through floating point.
//
//   absl::StatusOr<Quantity> q = Quantity::Parse("1.5Gi");
//   q->Value();      // 1610612736 (whole units, rounded away from zero like resource.Quantity)
//   q->milli();      // 1610612736000
#ifndef GPU_TENANCY_TOPOLOGY_QUANTITY_H_
#define GPU_TENANCY_TOPOLOGY_QUANTITY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace topology {

class Quantity {
 public:
  constexpr Quantity() = default;

  // Parses the Kubernetes quantity grammar: an optional sign, digits with an optional fraction,
  // and one suffix out of the binary SI (Ki..Ei), decimal SI (n, u, m, k, M..E) or an exponent
  // (e3, E-2). Returns InvalidArgument naming the text for junk, empty strings, spaces, or a value
  // whose milli-units do not fit in 64 bits. Fractions finer than 1m round away from zero.
  [[nodiscard]] static absl::StatusOr<Quantity> Parse(absl::string_view text);

  static constexpr Quantity FromMilli(int64_t milli) { return Quantity(milli); }
  // Caller guarantees |units| * 1000 fits in int64.
  static constexpr Quantity FromUnits(int64_t units) { return Quantity(units * 1000); }

  constexpr int64_t milli() const { return milli_; }
  // Whole units, rounded away from zero (resource.Quantity.Value()).
  int64_t Value() const;
  // Whole MiB of a byte quantity, rounded up: "20Gi" -> 20480, "1" -> 1.
  int64_t ValueMiB() const;
  bool IsZero() const { return milli_ == 0; }
  bool IsNegative() const { return milli_ < 0; }

  // Canonical short text ("1500m", "3", "20Gi" is printed as bytes "21474836480").
  std::string ToString() const;

  friend constexpr bool operator==(Quantity a, Quantity b) { return a.milli_ == b.milli_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) { return a.milli_ <=> b.milli_; }

 private:
  constexpr explicit Quantity(int64_t milli) : milli_(milli) {}
  int64_t milli_ = 0;
};

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_QUANTITY_H_
