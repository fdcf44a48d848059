#include "api/status.h"

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <new>

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

const char* status_name(collx_status_t status) {
  switch (status) {
    case COLLX_SUCCESS: return "success";
    case COLLX_IN_PROGRESS: return "in progress";
    case COLLX_ERR_INVALID_ARG: return "invalid argument";
    case COLLX_ERR_UNSUPPORTED: return "unsupported";
    case COLLX_ERR_NO_MEMORY: return "out of memory";
    case COLLX_ERR_TRANSPORT: return "transport error";
    case COLLX_ERR_PEER_FAILED: return "peer failed";
    case COLLX_ERR_TIMEOUT: return "timed out";
    case COLLX_ERR_MISMATCH: return "ranks disagree on the call";
    case COLLX_ERR_NOT_INITIALIZED: return "not initialized";
    case COLLX_ERR_CONFIG: return "bad configuration";
    case COLLX_ERR_COMM_FAILED: return "communicator failed earlier";
    case COLLX_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

Status error(collx_status_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Status st;
  try {
    st = Status(code, vformat(fmt, ap));
  } catch (...) {  // no memory for the message: the code alone (report names it)
    st = Status(code, std::string());
  }
  va_end(ap);
  return st;
}

Status exception_status(const char* where) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return error(COLLX_ERR_NO_MEMORY, "%s: out of memory", where);
  } catch (const std::exception& e) {
    return error(COLLX_ERR_INTERNAL, "%s: %s", where, e.what());
  } catch (...) {
    return error(COLLX_ERR_INTERNAL, "%s: an unknown exception", where);
  }
}

namespace {
thread_local char t_last_error[512];  // a buffer of its own: reporting allocates nothing
}

collx_status_t report(const Status& s) {
  if (s.ok()) {  // every successful call: no more than this
    t_last_error[0] = '\0';
    return COLLX_SUCCESS;
  }
  const char* text = s.message().empty() ? status_name(s.code()) : s.message().c_str();
  std::snprintf(t_last_error, sizeof t_last_error, "%s", text);
  return s.code();
}

}  // namespace collx

extern "C" const char* collx_last_error(void) { return collx::t_last_error; }
