// IoUringEngine: fio's "io_uring" engine on liburing. Queue() fills a
// submission entry, Commit() submits the batch with one io_uring_enter(2),
// Reap() waits for completions and takes every one that is ready. The file
// is registered (IOSQE_FIXED_FILE) to save a file lookup per I/O, and the
// ring asks for IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN where
// the kernel has them (6.0 / 5.19), falling back to fewer flags.
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
  Status Init(int fd, uint32_t depth) override;
  SubmitResult Queue(IoRequest* req) override;
  int Commit() override;
  int Reap(uint32_t min, uint32_t max, IoRequest** out) override;

 private:
  io_uring ring_{};
  bool ring_ready_ = false;
  uint32_t setup_flags_ = 0;
};

}  // namespace blkgen

#endif  // BLKGEN_IO_URING_ENGINE_H_
