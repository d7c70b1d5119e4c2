// Helpers of the end-to-end tests: run a binary with its output captured,
// read files, a temporary directory per test.
#ifndef BLKGEN_E2E_UTIL_H_
#define BLKGEN_E2E_UTIL_H_

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fio_json_reader.h"

namespace blkgen {

struct RunResult {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `argv` with stdout and stderr captured to files in `dir`.
inline RunResult RunCommand(const std::vector<std::string>& argv, const std::string& dir) {
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  RunResult r;
  const pid_t pid = fork();
  if (pid == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.stdout_text = ReadFile(out);
  r.stderr_text = ReadFile(err);
  return r;
}

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "blkgen_e2e_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr) << strerror(errno);
    dir_ = tmpl;
    // O_DIRECT where the temp file system takes it (tmpfs before 6.6 does not).
    const std::string probe = dir_ + "/probe";
    const int fd = open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
    direct_ = fd >= 0 ? "1" : "0";
    if (fd >= 0) close(fd);
    unlink(probe.c_str());
  }
  void TearDown() override {
    if (!HasFailure()) {
      const std::string cmd = "rm -rf '" + dir_ + "'";
      ASSERT_EQ(system(cmd.c_str()), 0);
    } else {
      std::cerr << "kept " << dir_ << "\n";
    }
  }

  std::string dir_;
  std::string direct_;

  // Reads a JSON report with FioJsonReader; fails the test if it cannot.
  FioReport ReadReport(const std::string& path, FioJsonReader* reader) {
    FioReport report;
    std::string error;
    EXPECT_TRUE(reader->Read(ReadFile(path), &report, &error)) << path << ": " << error;
    return report;
  }
};

}  // namespace blkgen

#endif  // BLKGEN_E2E_UTIL_H_
