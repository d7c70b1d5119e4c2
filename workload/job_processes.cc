#include "job_processes.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "job_runner.h"

namespace blkgen {
namespace {

void SetError(JobResult* r, int err, const std::string& text) {
  if (r->error != 0) return;
  r->error = err;
  std::snprintf(r->error_text, sizeof(r->error_text), "%s", text.c_str());
}

// Body of a job's process; never returns.
[[noreturn]] void RunChild(const JobSpec& spec, uint32_t index, JobResult* result, int ready_fd,
                           int go_fd) {
  {
    JobRunner runner(spec, index, result);
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

SharedResults::SharedResults(size_t count) : count_(count) {
  void* p = mmap(nullptr, sizeof(JobResult) * (count ? count : 1), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  results_ = static_cast<JobResult*>(p);
  for (size_t i = 0; i < count; ++i) new (&results_[i]) JobResult();
}

SharedResults::~SharedResults() {
  if (results_ != nullptr) munmap(results_, sizeof(JobResult) * (count_ ? count_ : 1));
}

void RunJobsInProcesses(const std::vector<JobSpec>& jobs, std::span<JobResult> results) {
  int ready[2];  // children -> parent: one byte each when set up
  int go[2];     // parent closes the write end to start all jobs
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) {
    const int err = errno;
    for (JobResult& r : results) SetError(&r, err, std::string("pipe: ") + std::strerror(err));
    return;
  }
  std::vector<pid_t> pids(jobs.size(), -1);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(ready[0]);
      close(go[1]);
      RunChild(jobs[i], static_cast<uint32_t>(i), &results[i], ready[1], go[0]);
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
}

}  // namespace blkgen
