// Sets (or, with a null value, unsets) an environment variable for a scope, then restores its
// former value or absence. Tests that set COLLX_* variables use it so that what the job's own
// environment holds is back in force for the next check.
#pragma once

#include <cstdlib>
#include <string>

namespace collx::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) before_ = old;
    value != nullptr ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { had_ ? setenv(name_, before_.c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string before_;
  bool had_ = false;
};

}  // namespace collx::test
