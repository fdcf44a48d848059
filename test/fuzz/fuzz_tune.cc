// libFuzzer target: COLLX_TUNE strings. A string that parses must give a table of sorted,
// contiguous ranges covering [0, inf) that prints back to a string parsing to the same table.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "select/select.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  collx::Selection sel;
  if (!collx::parse_tune(s, &sel).ok()) return 0;
  size_t expect = 0;
  for (const collx::SelectRange& r : sel.ranges) {
    if (r.lo != expect || r.hi <= r.lo) std::abort();
    expect = r.hi;
  }
  if (expect != collx::kInf) std::abort();
  collx::Selection again;
  if (!collx::parse_tune(sel.to_string(), &again).ok()) std::abort();
  if (again.to_string() != sel.to_string()) std::abort();
  return 0;
}
