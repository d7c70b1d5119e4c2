// Fuzz target: the devmodel C ABI as QEMU drives it. Each input is a profile
// (generated or mutated, see profile_text.h) and a stream of submits, polls
// and counter reads with a non-decreasing `now` (sometimes a smaller one, which
// the ABI must treat as the largest seen). Contract checked (devmodel.h):
//  - devmodel_open accepts exactly what CheckProfile accepts, with its message;
//  - a request gets an error iff it is invalid, and then {now, 1};
//  - every deadline >= now; deadlines are final when the device says so; a
//    non-final one polled at or after its deadline reaches a final one;
//  - after its final deadline a tag is unknown again: polling it gives {now, 1};
//  - counters are valid JSON; the same stream on a second instance built
//    through the C++ API gives the same deadlines (determinism), and the
//    model itself never returns a deadline before now (the ABI's clamp would
//    hide that) while now < kExactUntilNs.
// ASan/UBSan (BLKLAB_FUZZ) catch crashes, leaks and undefined behaviour.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "devmodel/device.h"
#include "devmodel/devmodel.h"
#include "devmodel/faults.h"
#include "devmodel/profile.h"
#include "profile_text.h"

namespace {

constexpr std::uint64_t kExactUntilNs = std::uint64_t{1} << 53;  // see devmodel.h
constexpr std::uint64_t kMaxTransferBytes = std::uint64_t{1} << 30;
constexpr int kMaxSteps = 1500;
constexpr int kMaxPollsPerRequest = 100000;
// Requests in flight at once: NCQ's 32 and then some (the HDD's SPTF pick is
// linear in its queue, as a drive's is; hosts bound the queue).
constexpr std::size_t kMaxInFlight = 64;
// Bytes one fuzzed request may touch (the model's work is linear in them).
constexpr std::uint64_t kMaxFuzzedBytes = std::uint64_t{4} << 20;

std::string g_profile;  // the current input's profile, printed on a violation

[[noreturn]] void Violation(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "contract violation: %s\n%s\nprofile:\n%s\n", what, detail.c_str(),
               g_profile.c_str());
  std::abort();
}

std::string Describe(const devmodel_request& r, std::uint64_t now) {
  return "op=" + std::to_string(r.op) + " offset=" + std::to_string(r.offset_bytes) +
         " length=" + std::to_string(r.length_bytes) + " tag=" + std::to_string(r.tag) +
         " now=" + std::to_string(now);
}

class Session {
 public:
  Session(devmodel_t* m, std::unique_ptr<devmodel::Device> shadow)
      : m_(m),
        shadow_(std::move(shadow)),
        capacity_(devmodel_capacity_bytes(m)),
        block_(devmodel_logical_block_bytes(m)),
        final_only_(devmodel_deadlines_final(m) != 0) {
    if (block_ != 512 && block_ != 4096) Violation("logical block size not 512 or 4096");
    if (capacity_ == 0 || capacity_ % block_ != 0) Violation("capacity not a block multiple");
    if (capacity_ != shadow_->capacity_bytes()) Violation("ABI and C++ capacities differ");
  }
  ~Session() { devmodel_close(m_); }

  void Run(FuzzedDataProvider& d) {
    for (int step = 0; step < kMaxSteps && d.remaining_bytes() > 0; ++step) {
      const int action = d.ConsumeIntegralInRange(0, 15);
      if (action <= 9 && pending_.size() < kMaxInFlight) {
        Submit(d);
      } else if (action <= 12) {
        PollPending(d);
      } else if (action == 13) {
        PollUnknown(d);
      } else if (action == 15 && d.ConsumeBool()) {
        SetOrigin(d);
      } else if (action == 14 && d.ConsumeBool()) {
        Cancel(d);
      } else if (action == 14) {
        HostReset(d);
      } else {
        CheckCounters();
      }
    }
    for (int i = 0; !pending_.empty(); ++i) {
      if (i > kMaxPollsPerRequest) Violation("pending requests never complete");
      PollPending(d);
    }
    CheckCounters();
  }

  void Summary() const {
    std::fprintf(stderr, "run: final_only=%d submits=%d polls=%d unknown=%d now=%llu\n",
                 final_only_, submits_, polls_, unknown_polls_,
                 static_cast<unsigned long long>(now_));
  }

 private:
  std::uint64_t NextNow(FuzzedDataProvider& d) {
    const std::uint64_t now = now_;
    switch (d.ConsumeIntegralInRange(0, 15)) {
      case 0:
      case 1:
      case 2:
        return now;
      case 3:
      case 4:
      case 5:
      case 6:
        return now + d.ConsumeIntegralInRange<std::uint64_t>(0, 20000);
      case 7:
      case 8:
      case 9:
        return now + d.ConsumeIntegralInRange<std::uint64_t>(0, 20000000);
      case 10:
        return now + d.ConsumeIntegralInRange<std::uint64_t>(0, 2000000000000ull);
      case 11:  // earlier than before: the ABI treats it as the largest seen
        return now - std::min(now, d.ConsumeIntegral<std::uint64_t>());
      case 12:  // weeks idle
        return now + d.ConsumeIntegralInRange<std::uint64_t>(0, 4000000000000000ull);
      case 13:  // far beyond exact timing: deadlines must still be >= now
        return d.ConsumeBool() ? std::max(now, d.ConsumeIntegral<std::uint64_t>()) : now;
      default:
        return now + d.ConsumeIntegralInRange<std::uint64_t>(0, 1000);
    }
  }

  // The workload starts: both the ABI and the shadow move their fault origin.
  void SetOrigin(FuzzedDataProvider& d) {
    const std::uint64_t now = Advance(NextNow(d));
    devmodel_set_origin(m_, now);
    if (auto* faulty = devmodel::FaultyDevice::Of(shadow_.get())) faulty->SetOrigin(now);
  }

  std::uint64_t Advance(std::uint64_t given) {
    now_ = std::max(now_, given);
    return now_;
  }

  devmodel_request MakeRequest(FuzzedDataProvider& d) {
    devmodel_request r{};
    const int op = d.ConsumeIntegralInRange(0, 15);
    r.op = op <= 5    ? DEVMODEL_OP_READ
           : op <= 10 ? DEVMODEL_OP_WRITE
           : op <= 11 ? DEVMODEL_OP_FLUSH
           : op <= 13 ? DEVMODEL_OP_TRIM
           : op == 14 ? d.ConsumeIntegralInRange<std::uint32_t>(4, 8)
                      : d.ConsumeIntegral<std::uint32_t>();
    r.queue_id = d.ConsumeIntegralInRange<std::uint32_t>(0, 64);
    const std::uint64_t blocks = capacity_ / block_;
    switch (d.ConsumeIntegralInRange(0, 7)) {
      case 0:
        r.offset_bytes = 0;
        break;
      case 1:  // the last blocks
        r.offset_bytes =
            (blocks - 1 - std::min<std::uint64_t>(blocks - 1, d.ConsumeIntegral<std::uint8_t>())) *
            block_;
        break;
      case 2:
        r.offset_bytes = d.ConsumeIntegral<std::uint64_t>();
        break;
      case 3:  // near the previous one: sequential streams, cache hits
        r.offset_bytes = std::min(last_end_, capacity_ - block_);
        break;
      default:
        r.offset_bytes = d.ConsumeIntegralInRange<std::uint64_t>(0, blocks - 1) * block_;
        break;
    }
    switch (d.ConsumeIntegralInRange(0, 15)) {
      case 15:
        r.length_bytes = 0;
        break;
      case 1:
        r.length_bytes = d.ConsumeIntegral<std::uint64_t>();
        break;
      case 2:  // misaligned
        r.length_bytes = d.ConsumeIntegralInRange<std::uint64_t>(1, 1 << 20);
        break;
      case 3:  // large: a few MiB, or around the transfer limit
        r.length_bytes = d.ConsumeBool()
                             ? d.ConsumeIntegralInRange<std::uint64_t>(1, 8192) * block_
                             : kMaxTransferBytes + block_ * d.ConsumeIntegralInRange(-1, 1);
        break;
      case 4:  // to the end of the device (now and then a trim of everything)
        r.length_bytes = capacity_ - std::min(capacity_, r.offset_bytes);
        break;
      default:
        r.length_bytes = d.ConsumeIntegralInRange<std::uint64_t>(1, 256) * block_;
        break;
    }
    // Keep the work per input bounded: long transfers are cut to a few MiB
    // (just above the 1 GiB limit stays: it must be refused, which is cheap;
    // the limit itself is in c_api_test), and a
    // trim of everything only on small devices (its cost is O(capacity)).
    const bool at_limit =
        r.length_bytes > kMaxTransferBytes && r.length_bytes <= kMaxTransferBytes + block_;
    const bool whole_small_trim =
        r.op == DEVMODEL_OP_TRIM && capacity_ <= (std::uint64_t{256} << 20);
    if (r.length_bytes > kMaxFuzzedBytes && !at_limit && !whole_small_trim &&
        r.length_bytes <= capacity_) {
      r.length_bytes = kMaxFuzzedBytes;
    }
    if (d.ConsumeIntegralInRange(0, 31) == 0)
      r.offset_bytes += 1 + d.ConsumeIntegral<std::uint8_t>();
    // Tags: fresh, or one whose completion was final (allowed to come back).
    if (!finished_.empty() && d.ConsumeIntegralInRange(0, 3) == 0) {
      r.tag = finished_[d.ConsumeIntegralInRange<std::size_t>(0, finished_.size() - 1)];
      if (pending_.count(r.tag)) r.tag = next_tag_++;
    } else {
      r.tag = next_tag_++;
    }
    return r;
  }

  bool Valid(const devmodel_request& r) const {
    if (r.op > DEVMODEL_OP_TRIM) return false;
    if (r.op == DEVMODEL_OP_FLUSH) return true;
    if (r.length_bytes == 0 || r.offset_bytes % block_ != 0 || r.length_bytes % block_ != 0) {
      return false;
    }
    if (r.offset_bytes >= capacity_ || r.length_bytes > capacity_ - r.offset_bytes) return false;
    if (r.op != DEVMODEL_OP_TRIM && r.length_bytes > kMaxTransferBytes) return false;
    return true;
  }

  void Submit(FuzzedDataProvider& d) {
    const devmodel_request r = MakeRequest(d);
    const std::uint64_t given = NextNow(d);
    const std::uint64_t now = Advance(given);
    devmodel_completion c{~0ull, 7};
    char* err = nullptr;
    // Both entry points: the older drops the status of the newer.
    const bool with_status = d.ConsumeBool();
    devmodel_result res{~0ull, 7, 9};
    if (with_status) {
      devmodel_submit_result(m_, &r, given, &res, &err);
      c = {res.deadline_ns, res.final};
    } else {
      devmodel_submit(m_, &r, given, &c, &err);
    }
    const bool valid = Valid(r);
    if (!valid) {
      if (err == nullptr) Violation("invalid request accepted", Describe(r, now));
      if (c.deadline_ns != now || c.final != 1) Violation("error completion not {now, 1}");
      devmodel_free(err);
      return;
    }
    if (err != nullptr) Violation("valid request refused", Describe(r, now) + ": " + err);
    ++submits_;
    if (r.op != DEVMODEL_OP_FLUSH) last_end_ = r.offset_bytes + r.length_bytes;
    devmodel::Request s;
    s.op = static_cast<devmodel::Op>(r.op);
    s.offset_bytes = r.offset_bytes;
    s.length_bytes = r.length_bytes;
    s.queue_id = r.queue_id;
    s.tag = r.tag;
    const devmodel::Completion raw = shadow_->Submit(s, now);
    Check(c, raw, now, "submit " + Describe(r, now));
    if (with_status) CheckStatus(res, raw, "submit " + Describe(r, now));
    if (final_only_ && c.final != 1) Violation("non-final deadline from a final-only device");
    if (!c.final)
      pending_[r.tag] = {c.deadline_ns, 0};
    else if (raw.status == devmodel::Status::kLost)
      lost_.push_back(r.tag);  // held until cancelled: its tag is not reused
    else
      finished_.push_back(r.tag);
    if (finished_.size() > 64) finished_.erase(finished_.begin());
  }

  void PollPending(FuzzedDataProvider& d) {
    if (pending_.empty()) return;
    // Any pending request may be polled once its time has come; mostly the
    // earliest, as a timer would.
    auto it = std::min_element(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
      return a.second.deadline < b.second.deadline;
    });
    if (d.ConsumeIntegralInRange(0, 3) == 0) {
      it = pending_.begin();
      std::advance(it, d.ConsumeIntegralInRange<std::size_t>(0, pending_.size() - 1));
    }
    const std::uint64_t tag = it->first;
    const std::uint64_t given = std::max(it->second.deadline, now_) +
                                (d.ConsumeBool() ? 0 : d.ConsumeIntegral<std::uint16_t>());
    const std::uint64_t now = Advance(given);
    devmodel_completion c{~0ull, 7};
    char* err = nullptr;
    const bool with_status = d.ConsumeBool();
    devmodel_result res{~0ull, 7, 9};
    if (with_status) {
      devmodel_poll_result(m_, tag, given, &res, &err);
      c = {res.deadline_ns, res.final};
    } else {
      devmodel_poll(m_, tag, given, &c, &err);
    }
    if (err != nullptr) Violation("poll error", err);
    const devmodel::Completion raw = shadow_->Poll(tag, now);
    if (with_status) CheckStatus(res, raw, "poll tag=" + std::to_string(tag));
    ++polls_;
    // A late poll may learn of a completion already past (the ABI then says
    // now), but never of one before the time the model asked to be polled.
    const std::uint64_t asked = it->second.deadline;
    Check(c, raw, std::min(now, asked),
          "poll tag=" + std::to_string(tag) + " now=" + std::to_string(now));
    if (c.deadline_ns < now) Violation("deadline before now (poll)");
    if (c.final) {
      pending_.erase(it);
      if (raw.status == devmodel::Status::kLost) {
        lost_.push_back(tag);
      } else {
        finished_.push_back(tag);
      }
    } else {
      it->second.deadline = c.deadline_ns;
      if (++it->second.polls > kMaxPollsPerRequest) Violation("a request is polled forever");
    }
  }

  void PollUnknown(FuzzedDataProvider& d) {
    std::uint64_t tag =
        d.ConsumeBool() || finished_.empty()
            ? next_tag_ + 1000 + d.ConsumeIntegral<std::uint16_t>()
            : finished_[d.ConsumeIntegralInRange<std::size_t>(0, finished_.size() - 1)];
    if (pending_.count(tag)) return;
    const std::uint64_t now = Advance(NextNow(d));
    devmodel_completion c{~0ull, 7};
    char* err = nullptr;
    devmodel_poll(m_, tag, now, &c, &err);
    if (err != nullptr) Violation("poll error", err);
    if (c.deadline_ns != now || c.final != 1) {
      Violation("unknown tag not {now, 1}",
                "tag=" + std::to_string(tag) + " now=" + std::to_string(now) + " got " +
                    std::to_string(c.deadline_ns) + "/" + std::to_string(c.final));
    }
    shadow_->Poll(tag, now);
    ++unknown_polls_;
  }

  // `floor`: the earliest deadline the model may give (now for a submit, the
  // time it asked to be polled at for a poll).
  void Check(const devmodel_completion& c, const devmodel::Completion& raw, std::uint64_t floor,
             const std::string& what) {
    if (c.final != 0 && c.final != 1) Violation("final is not 0 or 1", what);
    if (c.deadline_ns < floor) Violation("deadline before now", what);
    if (now_ < kExactUntilNs && raw.deadline_ns < floor) {
      Violation("the model returned a deadline before now (or before its own poll time)",
                what + " raw=" + std::to_string(raw.deadline_ns));
    }
    if (c.deadline_ns != std::max(raw.deadline_ns, now_) || (c.final != 0) != raw.final) {
      Violation("two instances of one profile and seed disagree", what);
    }
  }

  // A result's status is the model's, and only a final result has one.
  void CheckStatus(const devmodel_result& res, const devmodel::Completion& raw,
                   const std::string& what) {
    if (res.status != DEVMODEL_STATUS_OK && res.status != DEVMODEL_STATUS_MEDIA_ERROR &&
        res.status != DEVMODEL_STATUS_LOST) {
      Violation("unknown status", what);
    }
    const bool media = raw.final && raw.status == devmodel::Status::kMediaError;
    const bool lost = raw.final && raw.status == devmodel::Status::kLost;
    if ((res.status == DEVMODEL_STATUS_MEDIA_ERROR) != media ||
        (res.status == DEVMODEL_STATUS_LOST) != lost) {
      Violation("two instances of one profile and seed disagree on the status", what);
    }
  }

  // The host takes a request back: a lost one, one still polled, or a tag
  // the model no longer has (ignored). Both instances learn of it.
  void Cancel(FuzzedDataProvider& d) {
    std::uint64_t tag = next_tag_ + 1000 + d.ConsumeIntegral<std::uint16_t>();
    const int which = d.ConsumeIntegralInRange(0, 3);
    if (which <= 1 && !lost_.empty()) {
      const std::size_t i = d.ConsumeIntegralInRange<std::size_t>(0, lost_.size() - 1);
      tag = lost_[i];
      lost_.erase(lost_.begin() + static_cast<std::ptrdiff_t>(i));
      finished_.push_back(tag);
    } else if (which == 2 && !pending_.empty()) {
      auto it = pending_.begin();
      std::advance(it, d.ConsumeIntegralInRange<std::size_t>(0, pending_.size() - 1));
      tag = it->first;
      pending_.erase(it);
      finished_.push_back(tag);
    }
    const std::uint64_t now = Advance(NextNow(d));
    devmodel_cancel(m_, tag, now);
    if (auto* faulty = devmodel::FaultyDevice::Of(shadow_.get())) faulty->Cancel(tag);
  }

  // The host resets the device (a reset fault ends). Both instances learn
  // of it; whether the device had failed is the same in both, and it works
  // afterwards.
  void HostReset(FuzzedDataProvider& d) {
    const std::uint64_t now = Advance(NextNow(d));
    auto* faulty = devmodel::FaultyDevice::Of(shadow_.get());
    if (faulty != nullptr && (devmodel_failed(m_, now) == 1) != faulty->Failed(now)) {
      Violation("devmodel_failed differs from the model's");
    }
    devmodel_host_reset(m_, now);
    if (faulty != nullptr) faulty->HostReset(now);
    if (devmodel_failed(m_, now) != 0) Violation("still failed after the host's reset");
  }

  void CheckCounters() {
    char* err = nullptr;
    char* json = devmodel_counters_json(m_, &err);
    if (json == nullptr) Violation("counters_json failed", err != nullptr ? err : "");
    if (!nlohmann::json::accept(json)) Violation("counters are not valid JSON", json);
    devmodel_free(json);
  }

  struct Pending {
    std::uint64_t deadline;
    int polls;
  };
  devmodel_t* m_;
  std::unique_ptr<devmodel::Device> shadow_;
  std::uint64_t capacity_;
  std::uint32_t block_;
  bool final_only_;
  std::uint64_t now_ = 0;
  std::uint64_t next_tag_ = 1;
  std::uint64_t last_end_ = 0;
  std::map<std::uint64_t, Pending> pending_;
  std::vector<std::uint64_t> finished_;
  std::vector<std::uint64_t> lost_;  // final and lost, not cancelled yet
  int submits_ = 0, polls_ = 0, unknown_polls_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider d(data, size);
  const std::uint64_t seed = d.ConsumeIntegral<std::uint64_t>();
  g_profile = devmodel::fuzz::GenerateProfile(d);
  // The profile goes to devmodel_open as a file: a memfd, no disk.
  const int fd = memfd_create("profile.toml", MFD_CLOEXEC);
  if (fd < 0 ||
      write(fd, g_profile.data(), g_profile.size()) != static_cast<ssize_t>(g_profile.size())) {
    std::perror("memfd");
    std::abort();
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  devmodel::ProfileSummary summary;
  std::string check_error;
  const bool valid = devmodel::CheckProfile(path, &summary, &check_error);
  if (valid && !devmodel::fuzz::CheapToBuild(g_profile)) {
    close(fd);
    return 0;
  }
  char* err = nullptr;
  devmodel_t* m = devmodel_open(path.c_str(), seed, &err);
  if (!valid) {
    close(fd);
    if (m != nullptr) Violation("devmodel_open accepted what CheckProfile refused", check_error);
    if (err == nullptr || check_error != err) {
      Violation("devmodel_open and CheckProfile give different messages",
                check_error + "\n" + (err != nullptr ? err : "(none)"));
    }
    if (check_error.rfind(path + ":", 0) != 0)
      Violation("error does not name the file", check_error);
    devmodel_free(err);
    return 0;
  }
  if (m == nullptr) Violation("CheckProfile accepted what devmodel_open refused", err);
  std::string error;
  auto shadow = devmodel::LoadProfile(path, seed, &error);
  close(fd);
  if (shadow == nullptr) Violation("LoadProfile refused what devmodel_open accepted", error);
  if (devmodel_capacity_bytes(m) != summary.capacity_bytes)
    Violation("capacity differs from check");
  Session session(m, std::move(shadow));
  session.Run(d);
  if (std::getenv("DEVMODEL_FUZZ_VERBOSE") != nullptr) session.Summary();
  return 0;
}
