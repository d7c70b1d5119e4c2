// Status: the outcome of an operation that can fail, with a message for the
// user. Usage errors (bad command line) are told apart from run errors (open
// failed, EIO) because they map to different exit codes.
// Thread-safety: a value type; no shared state.
#ifndef BLKGEN_STATUS_H_
#define BLKGEN_STATUS_H_

#include <string>
#include <utility>

namespace blkgen {

class Status {
 public:
  enum class Code { kOk, kUsage, kRuntime };

  Status() = default;
  static Status Ok() { return Status(); }
  // A command line or option error; blkgen exits with code 2.
  static Status Usage(std::string msg) { return Status(Code::kUsage, std::move(msg)); }
  // An error while running a job (open, I/O, engine setup); exit code 1.
  // `err` is the errno value reported as the job's "error" (fio uses EINVAL
  // for errors that have no errno of their own).
  static Status Runtime(std::string msg, int err = kEinval) {
    return Status(Code::kRuntime, std::move(msg), err);
  }
  // A failed system call: message "<what>: <strerror(err)>".
  static Status Errno(const std::string& what, int err);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  int error_number() const { return errno_; }  // 0 unless a runtime error

 private:
  static constexpr int kEinval = 22;  // EINVAL on Linux

  Status(Code code, std::string msg, int err = 0)
      : code_(code), message_(std::move(msg)), errno_(err) {}

  Code code_ = Code::kOk;
  std::string message_;
  int errno_ = 0;
};

// Message for errno value `err` with a prefix: "<what>: <strerror(err)>".
std::string ErrnoMessage(const std::string& what, int err);

}  // namespace blkgen

#endif  // BLKGEN_STATUS_H_
