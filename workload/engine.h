// Engine: how a job hands I/O to the kernel, after fio's ioengine_ops but
// with each engine a class that owns its state. An engine either completes
// an I/O inside Queue() (sync engines, kCapSync) or stages it for Commit()
// and reports it from Reap(). The job loop (job_runner.cc) is written against
// this contract and instantiated per concrete engine, which are `final`, so
// the calls are direct in the hot path.
// Thread-safety: an engine is used by one thread.
#ifndef BLKGEN_ENGINE_H_
#define BLKGEN_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "job_spec.h"
#include "status.h"

namespace blkgen {

// One I/O. Requests and their buffers are owned by the job (a fixed pool
// allocated before the run); engines only borrow them between Queue() and
// completion.
struct IoRequest {
  uint64_t offset = 0;        // bytes
  uint8_t* buffer = nullptr;  // `length` bytes; aligned to 4096 for O_DIRECT
  uint64_t start_ns = 0;      // when the job prepared it (MonotonicNs)
  uint64_t issue_ns = 0;      // when it was handed to the kernel
  int64_t result = 0;         // set at completion: bytes transferred or -errno
  uint32_t length = 0;        // bytes
  Dir dir = Dir::kRead;
};

// Capability flags, as fio's FIO_SYNCIO and friends.
enum EngineCap : uint32_t {
  kCapSync = 1u << 0,         // Queue() performs the I/O and returns kCompleted
  kCapBatchSubmit = 1u << 1,  // Queue() stages; one Commit() submits the batch
};

enum class SubmitResult {
  kCompleted,  // done; req->result is set
  kQueued,     // staged; Commit() hands it to the kernel, Reap() returns it
  kBusy,       // no room; nothing happened, reap completions and retry
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual std::string_view name() const = 0;
  virtual uint32_t caps() const = 0;
  // Engine-specific setup flags, recorded in the output (0 if none).
  virtual uint32_t setup_flags() const { return 0; }

  // Prepares for I/O on `fd` with at most `depth` requests in flight.
  // REQUIRES: called once, before anything else; fd stays open until the
  // engine is destroyed.
  virtual Status Init(int fd, uint32_t depth) = 0;

  // Performs or stages `req`. REQUIRES: fewer than `depth` requests in
  // flight; req stays valid until it completes.
  virtual SubmitResult Queue(IoRequest* req) = 0;

  // Hands staged requests to the kernel, oldest first. Returns how many were
  // handed over (those not handed over stay staged, in order) or -errno;
  // -EAGAIN and -EBUSY mean "reap first".
  virtual int Commit() = 0;

  // Waits until at least `min` handed-over requests completed, then stores
  // up to `max` completed ones in `out` with their `result` set. Returns the
  // number stored or -errno (-EINTR: call again).
  virtual int Reap(uint32_t min, uint32_t max, IoRequest** out) = 0;
};

std::unique_ptr<Engine> MakeEngine(EngineKind kind);

}  // namespace blkgen

#endif  // BLKGEN_ENGINE_H_
