#include "api/status.h"

#include <cstdarg>
#include <cstdio>

namespace collx {

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[512];
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return fmt;
  return std::string(buf, static_cast<size_t>(n) < sizeof buf ? n : sizeof buf - 1);
}

namespace {
thread_local std::string t_last_error;
}

collx_status_t report(const Status& s) {
  t_last_error = s.ok() ? std::string() : s.message();
  return s.code();
}

}  // namespace collx

extern "C" const char* collx_last_error(void) { return collx::t_last_error.c_str(); }
