// Engine: how a job hands I/O to the kernel, after fio's ioengine_ops but
// with each engine a class that owns its state. An engine either completes
// an I/O inside Queue() (sync engines, kCapSync; and trims on every engine,
// as fio's FIO_ASYNCIO_SYNC_TRIM) or stages it for Commit() and reports it
// from Reap(). The job loop (job_runner.cc) is written against this contract
// and instantiated per concrete engine, which are `final`, so the calls are
// direct in the hot path.
// Thread-safety: an engine is used by one thread.
#ifndef BLKGEN_ENGINE_H_
#define BLKGEN_ENGINE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "job_spec.h"
#include "status.h"

namespace blkgen {

// What one request does. The first three match Dir.
enum class IoOp : uint8_t { kRead = 0, kWrite = 1, kTrim = 2, kFsync = 3, kFdatasync = 4 };

inline bool IsData(IoOp op) { return static_cast<uint8_t>(op) < kNumDirs; }

// One I/O. Requests and their buffers are owned by the job (a fixed pool
// allocated before the run); engines only borrow them between Queue() and
// completion.
struct IoRequest {
  uint64_t offset = 0;        // bytes
  uint8_t* buffer = nullptr;  // `length` bytes; aligned to 4096 for O_DIRECT
  uint64_t start_ns = 0;      // when the job prepared it (MonotonicNs)
  uint64_t issue_ns = 0;      // when it was handed to the kernel
  int64_t result = 0;         // set at completion: bytes transferred or -errno
  uint64_t block = 0;         // verify: index of the block in the job's region
  uint32_t length = 0;        // bytes (0 for syncs)
  uint32_t index = 0;         // position in the job's pool (fixed buffer index)
  IoOp op = IoOp::kRead;
  bool verify_phase = false;  // a read-back of the verify phase (not measured)
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

// What an engine gets to set up.
struct EngineSetup {
  int fd = -1;                    // stays open until the engine is destroyed
  bool block_device = false;      // trims: BLKDISCARD (else punch a hole)
  uint32_t depth = 1;             // most requests in flight
  std::span<IoRequest> requests;  // the job's pool (buffers for fixedbufs)
  uint64_t buffer_bytes = 0;      // bytes of each request's buffer
  bool sqthread_poll = false;     // io_uring only
  bool fixedbufs = false;         // io_uring only
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual std::string_view name() const = 0;
  virtual uint32_t caps() const = 0;
  // Engine-specific setup flags, recorded in the output (0 if none).
  virtual uint32_t setup_flags() const { return 0; }

  // Prepares for I/O. REQUIRES: called once, before anything else.
  virtual Status Init(const EngineSetup& setup) = 0;

  // Performs or stages `req`. REQUIRES: fewer than `depth` requests in
  // flight; req stays valid until it completes.
  virtual SubmitResult Queue(IoRequest* req) = 0;

  // Hands staged requests to the kernel, oldest first. Returns how many were
  // handed over (those not handed over stay staged, in order) or -errno;
  // -EAGAIN and -EBUSY mean "reap first".
  virtual int Commit() = 0;

  // Waits until at least `min` handed-over requests completed (0: does not
  // wait), then stores up to `max` completed ones in `out` with their
  // `result` set. Returns the number stored or -errno (-EINTR: call again).
  virtual int Reap(uint32_t min, uint32_t max, IoRequest** out) = 0;

  // Waits at most `timeout_ns` for one handed-over request to complete, then
  // stores up to `max` completed ones in `out`. Returns the number stored
  // (0: none completed in time) or -errno. Replay waits this way for an
  // I/O's due time while others are in flight, so their completions are
  // dated when they happen.
  virtual int ReapWithin(uint32_t max, IoRequest** out, uint64_t timeout_ns) = 0;

  // True if every request the last Reap() returned had completed before
  // that call and the call made no system call: a clock reading taken just
  // before it dates their completion (the job loop then saves one).
  virtual bool reaped_held() const { return false; }
};

std::unique_ptr<Engine> MakeEngine(EngineKind kind);

// Performs `req` with plain system calls (pread, pwrite, fsync, fdatasync,
// and trims as below) and returns bytes done or -errno.
int64_t PerformSync(int fd, bool block_device, const IoRequest& req);

// Discards [offset, offset + length): BLKDISCARD on a block device, a punched
// hole (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) in a file, as fio.
// Returns length or -errno.
int64_t Trim(int fd, bool block_device, uint64_t offset, uint32_t length);

}  // namespace blkgen

#endif  // BLKGEN_ENGINE_H_
