// Errors are values: a code plus a message that names the argument, rank, peer or step.
#pragma once

#include <string>
#include <utility>

#include "collx/collx.h"

namespace collx {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(collx_status_t code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == COLLX_SUCCESS; }
  collx_status_t code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  collx_status_t code_ = COLLX_SUCCESS;
  std::string message_;
};

// printf-style message builders for the error path only; the compiler checks the arguments
// against the format. Messages are cut at 511 bytes.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// error() allocates only the message; without memory for it, the Status has the code alone.
Status error(collx_status_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Called in a catch block: the exception being handled as a Status whose message starts with
// `where`: std::bad_alloc (a container of the library's found no memory) is
// COLLX_ERR_NO_MEMORY, any other COLLX_ERR_INTERNAL. Entry points and the communicator's
// thread catch every exception, so none ends the process.
Status exception_status(const char* where);

// collx_strerror's text: "bad configuration", ...; "unknown status" for another value.
const char* status_name(collx_status_t status);

// Sets the calling thread's collx_last_error() text (the status's name if the message is
// empty) and returns the code. Allocates nothing.
collx_status_t report(const Status& s);

}  // namespace collx

#define COLLX_TRY(expr)             \
  do {                              \
    ::collx::Status _st = (expr);   \
    if (!_st.ok()) return _st;      \
  } while (0)
