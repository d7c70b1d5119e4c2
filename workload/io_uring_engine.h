// IoUringEngine: fio's "io_uring" engine on liburing. Queue() fills a
// submission entry, Commit() submits what is staged with one
// io_uring_enter(2) (so the job's iodepth_batch_submit decides the batch),
// Reap() waits for `min` completions and takes up to `max`. Trims run
// synchronously inside Queue(), as in fio (the 6.1 kernel has no discard
// opcode). The file is registered (IOSQE_FIXED_FILE) to save a file lookup
// per I/O, and so is the ring (io_uring_register_ring_fd, 5.18) to save
// one per io_uring_enter; sqthread_poll adds IORING_SETUP_SQPOLL, fixedbufs registers every
// request's buffer and uses READ_FIXED / WRITE_FIXED.
//
// The ring asks for IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN
// (6.1) where the kernel has them (not with SQPOLL), falling back to
// SINGLE_ISSUER | COOP_TASKRUN (6.0 / 5.19), COOP_TASKRUN, then none. With
// DEFER_TASKRUN the kernel posts completions only when the job asks for them
// (a GETEVENTS enter, made by Reap() when it holds none), in one batch,
// instead of running task work for each completion: fewer guest instructions
// per I/O. Reap() moves every posted completion to its own list and hands
// them out from there. 6.1 posts a batch newest first (later kernels oldest
// first), so a deferred batch is put in submission order: for a device that
// completes in order that is the order of one completion at a time, what
// fio sees and what blkgen saw with COOP_TASKRUN. Latencies are measured
// when Reap() hands a request out, as before.
// Thread-safety: one thread, the one that called Init().
#ifndef BLKGEN_IO_URING_ENGINE_H_
#define BLKGEN_IO_URING_ENGINE_H_

#include <liburing.h>

#include <cstdint>
#include <span>
#include <vector>

#include "engine.h"

namespace blkgen {

// Sorts `batch` by seq[request->index] (the order the requests were queued
// in), in linear time when it is already sorted or reversed, as a deferred
// batch is (oldest first after 6.1, newest first on 6.1).
// REQUIRES: every request's index < seq.size().
void PutInSubmissionOrder(std::span<IoRequest*> batch, std::span<const uint64_t> seq);

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
  int ReapWithin(uint32_t max, IoRequest** out, uint64_t timeout_ns) override;
  bool reaped_held() const override { return reaped_held_; }

 private:
  // Moves every completion the kernel posted to the end of done_; a deferred
  // batch in submission order.
  void TakePosted();
  int HandOut(uint32_t max, IoRequest** out);

  io_uring ring_{};
  bool ring_ready_ = false;
  bool fixedbufs_ = false;
  bool block_device_ = false;
  bool deferred_ = false;     // IORING_SETUP_DEFER_TASKRUN
  bool reaped_held_ = false;  // the last Reap() took only from done_
  int fd_ = -1;               // not owned; for trims
  uint32_t setup_flags_ = 0;
  uint64_t next_seq_ = 0;         // submission order of the next Queue()d request
  std::vector<uint64_t> seq_;     // per request index: its submission order
  std::vector<IoRequest*> done_;  // completed, not handed out; [done_head_, end)
  size_t done_head_ = 0;
};

}  // namespace blkgen

#endif  // BLKGEN_IO_URING_ENGINE_H_
