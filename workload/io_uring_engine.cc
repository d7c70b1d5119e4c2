#include "io_uring_engine.h"

#include <errno.h>
#include <sys/uio.h>

#include <algorithm>
#include <vector>

namespace blkgen {

void PutInSubmissionOrder(std::span<IoRequest*> batch, std::span<const uint64_t> seq) {
  auto older = [seq](const IoRequest* a, const IoRequest* b) {
    return seq[a->index] < seq[b->index];
  };
  auto newer = [&](const IoRequest* a, const IoRequest* b) { return older(b, a); };
  if (std::is_sorted(batch.begin(), batch.end(), older)) return;
  if (std::is_sorted(batch.begin(), batch.end(), newer)) {
    std::reverse(batch.begin(), batch.end());  // 6.1, completed in order
  } else {
    std::sort(batch.begin(), batch.end(), older);
  }
}

IoUringEngine::~IoUringEngine() {
  if (ring_ready_) io_uring_queue_exit(&ring_);
}

Status IoUringEngine::Init(const EngineSetup& setup) {
  static constexpr unsigned kFlagChoices[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
      IORING_SETUP_COOP_TASKRUN,
      0,
  };
  fd_ = setup.fd;
  block_device_ = setup.block_device;
  const unsigned extra = setup.sqthread_poll ? IORING_SETUP_SQPOLL : 0;
  int ret = -EINVAL;
  for (unsigned flags : kFlagChoices) {
    if (setup.sqthread_poll && (flags & IORING_SETUP_DEFER_TASKRUN) != 0) continue;
    ret = io_uring_queue_init(setup.depth, &ring_, flags | extra);
    if (ret == 0) {
      setup_flags_ = flags | extra;
      deferred_ = (flags & IORING_SETUP_DEFER_TASKRUN) != 0;
      break;
    }
    if (ret != -EINVAL) break;
  }
  if (ret < 0) {
    return Status::Errno(
        setup.sqthread_poll ? "io_uring_queue_init (sqthread_poll)" : "io_uring_queue_init", -ret);
  }
  ring_ready_ = true;
  seq_.assign(setup.requests.size(), 0);
  done_.reserve(setup.depth);
  // Saves a file-table lookup per io_uring_enter (5.18); optional.
  (void)io_uring_register_ring_fd(&ring_);
  int fd = setup.fd;
  ret = io_uring_register_files(&ring_, &fd, 1);
  if (ret < 0) return Status::Errno("io_uring_register_files", -ret);
  if (setup.fixedbufs) {
    std::vector<iovec> iov(setup.requests.size());
    for (size_t i = 0; i < iov.size(); ++i) {
      iov[i].iov_base = setup.requests[i].buffer;
      iov[i].iov_len = setup.buffer_bytes;
    }
    ret = io_uring_register_buffers(&ring_, iov.data(), static_cast<unsigned>(iov.size()));
    if (ret < 0) return Status::Errno("io_uring_register_buffers (fixedbufs)", -ret);
    fixedbufs_ = true;
  }
  return Status::Ok();
}

SubmitResult IoUringEngine::Queue(IoRequest* req) {
  if (req->op == IoOp::kTrim) {
    req->result = Trim(fd_, block_device_, req->offset, req->length);
    return SubmitResult::kCompleted;
  }
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return SubmitResult::kBusy;
  switch (req->op) {
    case IoOp::kRead:
      if (fixedbufs_) {
        io_uring_prep_read_fixed(sqe, 0, req->buffer, req->length, req->offset,
                                 static_cast<int>(req->index));
      } else {
        io_uring_prep_read(sqe, 0, req->buffer, req->length, req->offset);
      }
      break;
    case IoOp::kWrite:
      if (fixedbufs_) {
        io_uring_prep_write_fixed(sqe, 0, req->buffer, req->length, req->offset,
                                  static_cast<int>(req->index));
      } else {
        io_uring_prep_write(sqe, 0, req->buffer, req->length, req->offset);
      }
      break;
    case IoOp::kFsync:
      io_uring_prep_fsync(sqe, 0, 0);
      break;
    case IoOp::kFdatasync:
      io_uring_prep_fsync(sqe, 0, IORING_FSYNC_DATASYNC);
      break;
    case IoOp::kTrim:
      break;
  }
  sqe->flags |= IOSQE_FIXED_FILE;  // index 0 of the registered files
  io_uring_sqe_set_data(sqe, req);
  seq_[req->index] = next_seq_++;
  return SubmitResult::kQueued;
}

void IoUringEngine::TakePosted() {
  if (done_head_ != 0) {  // keep done_ within the room reserved for it
    done_.erase(done_.begin(), done_.begin() + static_cast<std::ptrdiff_t>(done_head_));
    done_head_ = 0;
  }
  const size_t before = done_.size();
  unsigned head;
  unsigned count = 0;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    IoRequest* req = static_cast<IoRequest*>(io_uring_cqe_get_data(cqe));
    req->result = cqe->res;
    done_.push_back(req);
    ++count;
  }
  io_uring_cq_advance(&ring_, count);
  // A deferred batch completed after everything already in done_; within
  // it, the kernel's order is not the completion order on 6.1.
  if (deferred_ && count > 1) {
    PutInSubmissionOrder(std::span<IoRequest*>(done_).subspan(before), seq_);
  }
}

int IoUringEngine::Reap(uint32_t min, uint32_t max, IoRequest** out) {
  uint32_t have = static_cast<uint32_t>(done_.size() - done_head_);
  reaped_held_ = have != 0 && have >= min;
  if (!reaped_held_) {
    if (have < min) {
      io_uring_cqe* cqe = nullptr;
      const int ret = io_uring_wait_cqe_nr(&ring_, &cqe, min - have);
      if (ret < 0) return ret;
    } else if (deferred_ && io_uring_cq_ready(&ring_) == 0) {
      const int ret = io_uring_get_events(&ring_);  // min 0: post what completed
      if (ret < 0) return ret;
    }
    TakePosted();
  }
  return HandOut(max, out);
}

int IoUringEngine::ReapWithin(uint32_t max, IoRequest** out, uint64_t timeout_ns) {
  reaped_held_ = false;
  if (done_.size() == done_head_) {
    __kernel_timespec ts = {static_cast<long long>(timeout_ns / 1000000000ULL),
                            static_cast<long long>(timeout_ns % 1000000000ULL)};
    io_uring_cqe* cqe = nullptr;
    const int ret = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
    if (ret == -ETIME) return 0;
    if (ret < 0) return ret;
    TakePosted();
  }
  return HandOut(max, out);
}

// Moves up to `max` taken completions to `out`, oldest first.
int IoUringEngine::HandOut(uint32_t max, IoRequest** out) {
  const uint32_t have = static_cast<uint32_t>(done_.size() - done_head_);
  const uint32_t count = std::min(have, max);
  for (uint32_t i = 0; i < count; ++i) out[i] = done_[done_head_ + i];
  done_head_ += count;
  if (done_head_ == done_.size()) {
    done_.clear();
    done_head_ = 0;
  }
  return static_cast<int>(count);
}

}  // namespace blkgen
