// libFuzzer target: the COLLX_* environment. The input is split into lines, each one an
// environment entry ("NAME=value"); load_config must accept it or return COLLX_ERR_CONFIG,
// and an accepted configuration must hold values in their documented ranges.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/config.h"
#include "select/select.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> lines(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') lines.emplace_back();
    else if (data[i] != '\0') lines.back() += static_cast<char>(data[i]);
  }
  std::vector<char*> env;
  for (std::string& l : lines) env.push_back(l.data());
  env.push_back(nullptr);
  collx::Config c;
  const collx::Status st = collx::load_config(&c, env.data());
  if (!st.ok()) {
    if (st.code() != COLLX_ERR_CONFIG || st.message().empty()) std::abort();
    return 0;
  }
  if (!(c.timeout_s > 0) || !(c.timeout_s <= collx::kMaxTimeout) || c.ring_segment == 0 || c.spin < 0) {
    std::abort();
  }
  for (int ranks : {1, 2, 3, 64})
  for (collx::Locality where : {collx::Locality{true, true}, collx::Locality{true, false},
                                collx::Locality{}}) {
    collx::Selection sel;
    const collx::Status s = collx::make_selection(c, ranks, where, &sel);
    if (s.ok() ? sel.ranges.empty() : s.code() != COLLX_ERR_CONFIG) std::abort();
  }
  return 0;
}
