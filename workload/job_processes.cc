#include "job_processes.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <string>

#include "cgroup.h"
#include "clock.h"

namespace blkgen {
namespace {

constexpr size_t kSeriesWithoutRuntime = 1u << 18;  // intervals (7.3 h at 100 ms)
constexpr size_t kSeriesSlack = 16;

void SetError(JobResult* r, int err, const std::string& text) {
  if (r->error != 0) return;
  r->error = err;
  std::snprintf(r->error_text, sizeof(r->error_text), "%s", text.c_str());
}

// Body of a job's process; never returns.
[[noreturn]] void RunChild(const JobSpec& spec, uint32_t index, JobResult* result,
                           std::span<SeriesPoint> series, const RunContext& context, int ready_fd,
                           int go_fd) {
  {
    JobRunner runner(spec, index, result, series, context);
    const Status prepared = runner.Prepare();
    const char byte = prepared.ok() ? 1 : 0;
    while (write(ready_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    close(ready_fd);
    char go;
    while (read(go_fd, &go, 1) < 0 && errno == EINTR) {  // EOF = start
    }
    close(go_fd);
    if (prepared.ok()) runner.Run();
  }
  _exit(0);
}

}  // namespace

template <class T>
SharedArray<T>::SharedArray(size_t count, bool construct) : count_(count) {
  void* p = mmap(nullptr, sizeof(T) * (count ? count : 1), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  data_ = static_cast<T*>(p);
  if (construct) {
    for (size_t i = 0; i < count; ++i) new (&data_[i]) T();
  }
}

template <class T>
SharedArray<T>::~SharedArray() {
  if (data_ != nullptr) munmap(data_, sizeof(T) * (count_ ? count_ : 1));
}

template class SharedArray<JobResult>;
template class SharedArray<SeriesPoint>;

namespace {
size_t SeriesRoom(const JobSpec& job) {
  if (job.runtime_ns == 0) return kSeriesWithoutRuntime;
  return static_cast<size_t>(job.runtime_ns / job.log_interval_ns) + kSeriesSlack;
}
size_t TotalSeriesRoom(const std::vector<JobSpec>& jobs) {
  size_t n = 0;
  for (const JobSpec& j : jobs) n += SeriesRoom(j);
  return n;
}
}  // namespace

// The points are all-zero when unused, which the fresh mapping already is, so
// they are not constructed (that would touch every page).
SharedSeries::SharedSeries(const std::vector<JobSpec>& jobs)
    : points_(TotalSeriesRoom(jobs), /*construct=*/false) {
  size_t at = 0;
  for (const JobSpec& j : jobs) {
    first_.push_back(at);
    count_.push_back(SeriesRoom(j));
    at += SeriesRoom(j);
  }
}

void ResolveSeeds(std::vector<JobSpec>* jobs) {
  for (JobSpec& job : *jobs) {
    if (job.randseed_given || job.randrepeat) continue;
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed)) {
      seed = MonotonicNs() ^ (static_cast<uint64_t>(getpid()) << 32);
    }
    job.randseed = seed;
  }
}

RunOutcome RunJobsInProcesses(const std::vector<JobSpec>& jobs, std::span<JobResult> results,
                              SharedSeries* series, const RunContext& context) {
  RunOutcome outcome;
  int ready[2];  // children -> parent: one byte each when set up
  int go[2];     // parent closes the write end to start all jobs
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) {
    const int err = errno;
    for (JobResult& r : results) SetError(&r, err, std::string("pipe: ") + std::strerror(err));
    return outcome;
  }
  std::vector<pid_t> pids(jobs.size(), -1);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(ready[0]);
      close(go[1]);
      RunChild(jobs[i], static_cast<uint32_t>(i), &results[i], series->of(i), context, ready[1],
               go[0]);
    }
    if (pid < 0) {
      const int err = errno;
      SetError(&results[i], err, std::string("fork: ") + std::strerror(err));
      continue;
    }
    pids[i] = pid;
  }
  close(ready[1]);
  close(go[0]);
  // Wait until every child is set up (or gone: EOF once all closed `ready`).
  char buf[64];
  while (true) {
    const ssize_t n = read(ready[0], buf, sizeof(buf));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  close(ready[0]);

  // fio's disk_util: the disks of the jobs' files, sampled around the run.
  std::vector<std::string> disks;
  for (const JobSpec& job : jobs) {
    DiskId disk;
    if (!WholeDiskOf(job.EffectiveFilename(), context.sysfs_root, &disk).ok()) continue;
    if (std::find(disks.begin(), disks.end(), disk.name) == disks.end()) {
      disks.push_back(disk.name);
    }
  }
  std::vector<DiskStat> before(disks.size());
  std::vector<bool> sampled(disks.size());
  for (size_t i = 0; i < disks.size(); ++i) {
    sampled[i] = ReadDiskStat(context.sysfs_root, disks[i], &before[i]).ok();
  }
  const uint64_t started = MonotonicNs();
  close(go[1]);  // start

  for (size_t i = 0; i < jobs.size(); ++i) {
    if (pids[i] < 0) continue;
    int status = 0;
    while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
      SetError(&results[i], EINTR,
               std::string("job process killed by signal ") + strsignal(WTERMSIG(status)));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      SetError(&results[i], EINVAL,
               "job process exited with status " + std::to_string(WEXITSTATUS(status)));
    }
  }
  const uint64_t elapsed_ms = (MonotonicNs() - started) / 1000000;
  for (size_t i = 0; i < disks.size(); ++i) {
    DiskStat after;
    if (!sampled[i] || !ReadDiskStat(context.sysfs_root, disks[i], &after).ok()) continue;
    outcome.disk_util.push_back(DiskUtilBetween(disks[i], before[i], after, elapsed_ms));
  }

  // Remove the cgroups the jobs created, deepest first.
  std::map<std::string, int> created;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].cgroup.empty() || jobs[i].cgroup_nodelete) continue;
    int& levels = created[jobs[i].cgroup];
    levels = std::max<int>(levels, results[i].cgroup_created_levels);
  }
  for (const auto& [name, levels] : created) {
    if (levels == 0) continue;
    Status s = RemoveCgroup(context.cgroup_root, name, levels);
    if (!s.ok()) outcome.warnings.push_back(s.message());
  }
  return outcome;
}

}  // namespace blkgen
