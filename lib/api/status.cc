#include "api/status.h"

#include <cstdarg>
#include <cstdio>

namespace collx {

namespace {

std::string vformat(const char* fmt, va_list ap) {
  char buf[512];
  const int n = vsnprintf(buf, sizeof buf, fmt, ap);
  if (n < 0) return fmt;
  return std::string(buf, static_cast<size_t>(n) < sizeof buf ? n : sizeof buf - 1);
}

}  // namespace

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

Status error(collx_status_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Status st(code, vformat(fmt, ap));
  va_end(ap);
  return st;
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
