#include "libaio_engine.h"

#include <errno.h>

namespace blkgen {

LibaioEngine::~LibaioEngine() {
  if (ctx_ != nullptr) io_destroy(ctx_);  // waits for I/O still in flight
}

Status LibaioEngine::Init(const EngineSetup& setup) {
  fd_ = setup.fd;
  block_device_ = setup.block_device;
  const int ret = io_setup(static_cast<int>(setup.depth), &ctx_);
  if (ret < 0) {
    ctx_ = nullptr;
    return Status::Errno("io_setup", -ret);
  }
  iocbs_.resize(setup.requests.size());
  staged_.reserve(setup.depth);
  events_.resize(setup.depth);
  return Status::Ok();
}

SubmitResult LibaioEngine::Queue(IoRequest* req) {
  iocb* cb = &iocbs_[req->index];
  switch (req->op) {
    case IoOp::kRead:
      io_prep_pread(cb, fd_, req->buffer, req->length, static_cast<long long>(req->offset));
      break;
    case IoOp::kWrite:
      io_prep_pwrite(cb, fd_, req->buffer, req->length, static_cast<long long>(req->offset));
      break;
    case IoOp::kTrim:
      req->result = Trim(fd_, block_device_, req->offset, req->length);
      return SubmitResult::kCompleted;
    case IoOp::kFsync:
      io_prep_fsync(cb, fd_);
      break;
    case IoOp::kFdatasync:
      io_prep_fdsync(cb, fd_);
      break;
  }
  cb->data = req;
  staged_.push_back(cb);  // at most depth entries: capacity reserved in Init()
  return SubmitResult::kQueued;
}

int LibaioEngine::Commit() {
  const long n = static_cast<long>(staged_.size());
  if (n == 0) return 0;
  int ret;
  do {
    ret = io_submit(ctx_, n, staged_.data());
  } while (ret == -EINTR);
  if (ret > 0) staged_.erase(staged_.begin(), staged_.begin() + ret);
  return ret;
}

int LibaioEngine::Reap(uint32_t min, uint32_t max, IoRequest** out) {
  if (max > events_.size()) max = static_cast<uint32_t>(events_.size());
  timespec zero = {0, 0};
  const int n = io_getevents(ctx_, static_cast<long>(min), static_cast<long>(max), events_.data(),
                             min == 0 ? &zero : nullptr);
  if (n < 0) return n;
  for (int i = 0; i < n; ++i) {
    IoRequest* req = static_cast<IoRequest*>(events_[i].data);
    req->result = static_cast<long>(events_[i].res);  // bytes or -errno
    out[i] = req;
  }
  return n;
}

int LibaioEngine::ReapWithin(uint32_t max, IoRequest** out, uint64_t timeout_ns) {
  if (max > events_.size()) max = static_cast<uint32_t>(events_.size());
  timespec ts = {static_cast<time_t>(timeout_ns / 1000000000ULL),
                 static_cast<long>(timeout_ns % 1000000000ULL)};
  const int n = io_getevents(ctx_, 1, static_cast<long>(max), events_.data(), &ts);
  if (n < 0) return n;
  for (int i = 0; i < n; ++i) {
    IoRequest* req = static_cast<IoRequest*>(events_[i].data);
    req->result = static_cast<long>(events_[i].res);
    out[i] = req;
  }
  return n;
}

}  // namespace blkgen
