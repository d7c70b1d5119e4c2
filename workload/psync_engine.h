// PsyncEngine: one pread(2)/pwrite(2) (fsync, fdatasync, trim) per I/O inside
// Queue(), fio's "psync". Depth is always 1. Thread-safety: one thread.
#ifndef BLKGEN_PSYNC_ENGINE_H_
#define BLKGEN_PSYNC_ENGINE_H_

#include "engine.h"

namespace blkgen {

class PsyncEngine final : public Engine {
 public:
  static constexpr uint32_t kCaps = kCapSync;

  std::string_view name() const override { return "psync"; }
  uint32_t caps() const override { return kCaps; }
  Status Init(const EngineSetup& setup) override;
  SubmitResult Queue(IoRequest* req) override {
    req->result = PerformSync(fd_, block_device_, *req);
    return SubmitResult::kCompleted;
  }
  int Commit() override { return 0; }
  int Reap(uint32_t, uint32_t, IoRequest**) override { return 0; }
  int ReapWithin(uint32_t, IoRequest**, uint64_t) override { return 0; }

 private:
  int fd_ = -1;  // not owned
  bool block_device_ = false;
};

}  // namespace blkgen

#endif  // BLKGEN_PSYNC_ENGINE_H_
