// Test helpers: a closed-loop host that keeps `depth` requests outstanding and
// an open-loop one that submits at given times, both following the completion
// protocol (poll when a deadline is not final) as the QEMU glue does, and the
// process's resident memory. Test-only; fixed seeds.
#ifndef DEVMODEL_SRC_TEST_UTIL_H_
#define DEVMODEL_SRC_TEST_UTIL_H_

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <utility>
#include <vector>

#include "devmodel/device.h"

namespace devmodel::testing {

struct Finished {
  Request request;
  TimeNs submitted_ns, completed_ns;
};

// Runs `count` requests from `next` (called with the submit time) through
// `device`, `depth` at a time, each new one submitted when one completes.
inline std::vector<Finished> RunClosedLoop(Device& device, int depth, int count,
                                           const std::function<Request(TimeNs)>& next,
                                           TimeNs start_ns = 0) {
  std::vector<Finished> done;
  // (event time, tag) -> (request, submitted, final)
  struct Pending {
    Request r;
    TimeNs submitted;
    bool final;
  };
  std::multimap<std::pair<TimeNs, std::uint64_t>, Pending> events;
  std::uint64_t tag = 0;
  int issued = 0;
  auto submit = [&](TimeNs now) {
    Request r = next(now);
    r.tag = ++tag;
    const Completion c = device.Submit(r, now);
    events.emplace(std::make_pair(c.deadline_ns, r.tag), Pending{r, now, c.final});
    ++issued;
  };
  for (int i = 0; i < depth && issued < count; ++i) submit(start_ns);
  while (!events.empty()) {
    auto it = events.begin();
    const TimeNs now = it->first.first;
    Pending p = it->second;
    events.erase(it);
    if (!p.final) {
      const Completion c = device.Poll(p.r.tag, now);
      events.emplace(std::make_pair(c.deadline_ns, p.r.tag), Pending{p.r, p.submitted, c.final});
      continue;
    }
    done.push_back({p.r, p.submitted, now});
    if (issued < count) submit(now);
  }
  return done;
}

// RunClosedLoop's submit and completion times, in completion order
// (submitted, completed, submitted, completed, ...): what two runs of the
// same stream compare to tell whether a device answered them alike.
inline std::vector<TimeNs> ClosedLoopTimes(Device& device, int depth, int count,
                                           const std::function<Request(TimeNs)>& next) {
  std::vector<TimeNs> times;
  for (const auto& f : RunClosedLoop(device, depth, count, next)) {
    times.push_back(f.submitted_ns);
    times.push_back(f.completed_ns);
  }
  return times;
}

// A request and the time it is submitted.
struct Timed {
  Request request;
  TimeNs at;
};

// Runs `requests` as QEMU does: each submitted at its time (in the order
// given; REQUIRES times non-decreasing), a completion that is not final
// polled when its time comes (earliest first, before a submit at the same
// time). Tags are set to the request's index + 1. Returns each request's
// final deadline, in the order given.
inline std::vector<TimeNs> RunToFinal(Device& d, std::vector<Timed> requests) {
  std::vector<TimeNs> done(requests.size());
  using Poll = std::pair<TimeNs, std::size_t>;  // (time, index)
  std::priority_queue<Poll, std::vector<Poll>, std::greater<>> polls;
  auto settle = [&](std::size_t i, Completion c) {
    if (c.final) {
      done[i] = c.deadline_ns;
    } else {
      polls.emplace(c.deadline_ns, i);
    }
  };
  for (std::size_t next = 0; next < requests.size() || !polls.empty();) {
    if (!polls.empty() && (next == requests.size() || polls.top().first <= requests[next].at)) {
      const auto [t, i] = polls.top();
      polls.pop();
      settle(i, d.Poll(i + 1, t));
    } else {
      requests[next].request.tag = next + 1;
      settle(next, d.Submit(requests[next].request, requests[next].at));
      ++next;
    }
  }
  return done;
}

// The final deadline of `r` submitted at `now` with nothing else submitted
// until it completes.
inline TimeNs Final(Device& d, const Request& r, TimeNs now) {
  return RunToFinal(d, {{r, now}})[0];
}

// Built with -fsanitize=address (make test SANITIZE=1): resident memory then
// includes the shadow and the quarantine, so RSS bounds do not apply.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderAddressSanitizer = true;
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif

// Resident memory of this process in bytes (/proc/self/statm), 0 if unknown.
inline std::uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int fields = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return fields == 2 ? resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace devmodel::testing

#endif  // DEVMODEL_SRC_TEST_UTIL_H_
