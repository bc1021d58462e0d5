// topology::Quantity::Parse, the Kubernetes quantity grammar ("8Gi", "500m", "1e3").
// Invariants: a parsed quantity prints (ToString) to text that parses back to the same value;
// Value() and ValueMiB() are defined (UBSan checks the arithmetic); the sign agrees.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "topology/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<topology::Quantity> q = topology::Quantity::Parse(text);
  if (!q.ok()) {
    FUZZ_CHECK(q.status().code() == absl::StatusCode::kInvalidArgument, q.status().ToString());
    return 0;
  }
  const std::string printed = q->ToString();
  absl::StatusOr<topology::Quantity> again = topology::Quantity::Parse(printed);
  FUZZ_CHECK(again.ok(), printed);
  FUZZ_CHECK(*again == *q, printed);
  const int64_t units = q->Value();
  const int64_t mib = q->ValueMiB();
  FUZZ_CHECK(q->IsNegative() == (q->milli() < 0), printed);
  FUZZ_CHECK(q->IsZero() == (units == 0), printed);
  FUZZ_CHECK((units < 0) == q->IsNegative(), printed);
  FUZZ_CHECK(mib >= 0 || q->IsNegative(), printed);
  return 0;
}
