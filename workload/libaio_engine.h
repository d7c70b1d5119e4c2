// LibaioEngine: fio's "libaio" engine on Linux native AIO (libaio's static
// library). Queue() prepares the request's own iocb, Commit() hands what is
// staged to io_submit(2), Reap() calls io_getevents(2) with the job's
// min/max. fsync and fdatasync are queued (IOCB_CMD_FSYNC / FDSYNC); trims
// run synchronously inside Queue(), as in fio. As everywhere with native AIO,
// buffered I/O (direct=0) completes inside io_submit.
// Thread-safety: one thread.
#ifndef BLKGEN_LIBAIO_ENGINE_H_
#define BLKGEN_LIBAIO_ENGINE_H_

#include <libaio.h>

#include <vector>

#include "engine.h"

namespace blkgen {

class LibaioEngine final : public Engine {
 public:
  static constexpr uint32_t kCaps = kCapBatchSubmit;

  LibaioEngine() = default;
  LibaioEngine(const LibaioEngine&) = delete;
  LibaioEngine& operator=(const LibaioEngine&) = delete;
  ~LibaioEngine() override;

  std::string_view name() const override { return "libaio"; }
  uint32_t caps() const override { return kCaps; }
  Status Init(const EngineSetup& setup) override;
  SubmitResult Queue(IoRequest* req) override;
  int Commit() override;
  int Reap(uint32_t min, uint32_t max, IoRequest** out) override;
  int ReapWithin(uint32_t max, IoRequest** out, uint64_t timeout_ns) override;

 private:
  io_context_t ctx_ = nullptr;
  int fd_ = -1;  // not owned
  bool block_device_ = false;
  std::vector<iocb> iocbs_;    // one per request of the pool
  std::vector<iocb*> staged_;  // queued, not yet submitted, oldest first
  std::vector<io_event> events_;
};

}  // namespace blkgen

#endif  // BLKGEN_LIBAIO_ENGINE_H_
