// IoUringEngine: fio's "io_uring" engine on liburing. Queue() fills a
// submission entry, Commit() submits what is staged with one
// io_uring_enter(2) (so the job's iodepth_batch_submit decides the batch),
// Reap() waits for `min` completions and takes up to `max`. Trims run
// synchronously inside Queue(), as in fio (the 6.1 kernel has no discard
// opcode). The file is registered (IOSQE_FIXED_FILE) to save a file lookup
// per I/O, and the ring asks for IORING_SETUP_SINGLE_ISSUER |
// IORING_SETUP_COOP_TASKRUN where the kernel has them (6.0 / 5.19), falling
// back to fewer flags; sqthread_poll adds IORING_SETUP_SQPOLL, fixedbufs
// registers every request's buffer and uses READ_FIXED / WRITE_FIXED.
// Thread-safety: one thread, the one that called Init().
#ifndef BLKGEN_IO_URING_ENGINE_H_
#define BLKGEN_IO_URING_ENGINE_H_

#include <liburing.h>

#include "engine.h"

namespace blkgen {

class IoUringEngine final : public Engine {
 public:
  static constexpr uint32_t kCaps = kCapBatchSubmit;

  IoUringEngine() = default;
  IoUringEngine(const IoUringEngine&) = delete;
  IoUringEngine& operator=(const IoUringEngine&) = delete;
  ~IoUringEngine() override;

  std::string_view name() const override { return "io_uring"; }
  uint32_t caps() const override { return kCaps; }
  uint32_t setup_flags() const override { return setup_flags_; }
  Status Init(const EngineSetup& setup) override;
  SubmitResult Queue(IoRequest* req) override;
  int Commit() override { return io_uring_submit(&ring_); }
  int Reap(uint32_t min, uint32_t max, IoRequest** out) override;

 private:
  io_uring ring_{};
  bool ring_ready_ = false;
  bool fixedbufs_ = false;
  bool block_device_ = false;
  int fd_ = -1;  // not owned; for trims
  uint32_t setup_flags_ = 0;
};

}  // namespace blkgen

#endif  // BLKGEN_IO_URING_ENGINE_H_
