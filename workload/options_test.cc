#include "options.h"

#include <gtest/gtest.h>

#include <functional>

namespace blkgen {
namespace {

constexpr uint64_t kSec = 1000000000ULL;

struct ParseCase {
  const char* label;
  std::vector<std::string> args;
  std::function<void(JobSpec*)> expect;  // edits DefaultJobSpec() into the expected job
};

void ExpectSameJob(const JobSpec& got, const JobSpec& want, const char* label) {
  SCOPED_TRACE(label);
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.filename, want.filename);
  EXPECT_EQ(got.rw, want.rw);
  EXPECT_EQ(got.bs, want.bs);
  EXPECT_EQ(got.size, want.size);
  EXPECT_EQ(got.offset, want.offset);
  EXPECT_EQ(got.iodepth, want.iodepth);
  EXPECT_EQ(got.runtime_ns, want.runtime_ns);
  EXPECT_EQ(got.time_based, want.time_based);
  EXPECT_EQ(got.ramp_ns, want.ramp_ns);
  EXPECT_EQ(got.direct, want.direct);
  EXPECT_EQ(got.ioengine, want.ioengine);
  EXPECT_EQ(got.randseed, want.randseed);
  EXPECT_EQ(got.percentiles, want.percentiles);
}

TEST(OptionsTest, Defaults) {
  const JobSpec d = DefaultJobSpec();
  EXPECT_EQ(d.rw, RwMode::kRead);
  EXPECT_EQ(d.bs, (std::array<uint64_t, 3>{4096, 4096, 4096}));
  EXPECT_EQ(d.size, 0u);
  EXPECT_EQ(d.offset, 0u);
  EXPECT_EQ(d.iodepth, 1u);
  EXPECT_EQ(d.runtime_ns, 0u);
  EXPECT_FALSE(d.time_based);
  EXPECT_EQ(d.ramp_ns, 0u);
  EXPECT_FALSE(d.direct);
  EXPECT_EQ(d.ioengine, EngineKind::kPsync);  // fio's default on Linux
  EXPECT_EQ(d.randseed, 0xb1899bedULL);
  EXPECT_EQ(d.percentiles, (std::vector<double>{1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99,
                                                99.5, 99.9, 99.95, 99.99}));
}

TEST(OptionsTest, SingleJobTable) {
  const ParseCase cases[] = {
      {"issue example",
       {"--name=randread", "--rw=randread", "--bs=4k", "--iodepth=32", "--runtime=60",
        "--time_based", "--direct=1", "--ioengine=io_uring", "--filename=/dev/nvme0n1"},
       [](JobSpec* j) {
         j->name = "randread";
         j->rw = RwMode::kRandRead;
         j->iodepth = 32;
         j->runtime_ns = 60 * kSec;
         j->time_based = true;
         j->direct = true;
         j->ioengine = EngineKind::kIoUring;
         j->filename = "/dev/nvme0n1";
       }},
      {"defaults only", {"--name=d"}, [](JobSpec* j) { j->name = "d"; }},
      {"sizes and times",
       {"--name=s", "--size=16M", "--offset=1g", "--runtime=500ms", "--ramp_time=2s", "--rw=write",
        "--bs=128k"},
       [](JobSpec* j) {
         j->name = "s";
         j->size = 16ULL << 20;
         j->offset = 1ULL << 30;
         j->runtime_ns = kSec / 2;
         j->ramp_ns = 2 * kSec;
         j->rw = RwMode::kWrite;
         j->bs = {128 << 10, 128 << 10, 128 << 10};
       }},
      {"bs per direction",
       {"--name=b", "--bs=4k,64k"},
       [](JobSpec* j) {
         j->name = "b";
         j->bs = {4096, 65536, 65536};  // the last value repeats, as in fio
       }},
      {"bs write only",
       {"--name=b", "--bs=,8k"},
       [](JobSpec* j) {
         j->name = "b";
         j->bs = {4096, 8192, 8192};
       }},
      {"value in next argument",
       {"--name", "n", "--bs", "8k", "--time_based=0"},
       [](JobSpec* j) {
         j->name = "n";
         j->bs = {8192, 8192, 8192};
       }},
      {"psync caps depth",
       {"--name=p", "--iodepth=8"},
       [](JobSpec* j) {
         j->name = "p";
         j->iodepth = 1;
       }},
      {"seed",
       {"--name=r", "--randseed=42", "--rw=randwrite"},
       [](JobSpec* j) {
         j->name = "r";
         j->randseed = 42;
         j->rw = RwMode::kRandWrite;
       }},
  };
  for (const ParseCase& c : cases) {
    CommandLine cl;
    Status s = ParseCommandLine(c.args, &cl);
    ASSERT_TRUE(s.ok()) << c.label << ": " << s.message();
    ASSERT_EQ(cl.jobs.size(), 1u) << c.label;
    JobSpec want = DefaultJobSpec();
    c.expect(&want);
    ExpectSameJob(cl.jobs[0], want, c.label);
  }
}

TEST(OptionsTest, GlobalOptionsAndSeveralJobs) {
  CommandLine cl;
  ASSERT_TRUE(ParseCommandLine({"--ioengine=io_uring", "--bs=8k", "--output-format=json",
                                "--name=a", "--rw=randread", "--name=b", "--bs=16k", "--rw=write"},
                               &cl)
                  .ok());
  ASSERT_EQ(cl.jobs.size(), 2u);
  EXPECT_EQ(cl.program.format, OutputFormat::kJson);
  EXPECT_EQ(cl.global_options, (std::vector<GivenOption>{{"ioengine", "io_uring"}, {"bs", "8k"}}));
  EXPECT_EQ(cl.jobs[0].name, "a");
  EXPECT_EQ(cl.jobs[0].ioengine, EngineKind::kIoUring);
  EXPECT_EQ(cl.jobs[0].bs[0], 8192u);
  EXPECT_EQ(cl.jobs[0].rw, RwMode::kRandRead);
  EXPECT_EQ(cl.jobs[1].name, "b");
  EXPECT_EQ(cl.jobs[1].ioengine, EngineKind::kIoUring);
  EXPECT_EQ(cl.jobs[1].bs[0], 16384u);
  EXPECT_EQ(cl.jobs[1].rw, RwMode::kWrite);
  // "job options" holds what the job itself set, as in fio.
  EXPECT_EQ(cl.jobs[1].given,
            (std::vector<GivenOption>{{"name", "b"}, {"bs", "16k"}, {"rw", "write"}}));
}

TEST(OptionsTest, FlagWithoutValueIsKeptWithoutOne) {
  // fio omits such flags from "job options" / "global options".
  CommandLine cl;
  ASSERT_TRUE(ParseCommandLine({"--time_based", "--runtime=1", "--name=a"}, &cl).ok());
  EXPECT_TRUE(cl.jobs[0].time_based);
  ASSERT_EQ(cl.global_options.size(), 2u);
  EXPECT_EQ(cl.global_options[0].first, "time_based");
  EXPECT_FALSE(cl.global_options[0].second.has_value());
}

TEST(OptionsTest, RepeatedOptionKeepsPositionAndLastValue) {
  CommandLine cl;
  ASSERT_TRUE(ParseCommandLine({"--name=a", "--bs=4k", "--rw=write", "--bs=8k"}, &cl).ok());
  EXPECT_EQ(cl.jobs[0].bs[0], 8192u);
  EXPECT_EQ(cl.jobs[0].given,
            (std::vector<GivenOption>{{"name", "a"}, {"bs", "8k"}, {"rw", "write"}}));
}

TEST(OptionsTest, PsyncDepthNote) {
  CommandLine cl;
  ASSERT_TRUE(ParseCommandLine({"--name=a", "--iodepth=4"}, &cl).ok());
  ASSERT_EQ(cl.notes.size(), 1u);
  EXPECT_NE(cl.notes[0].find("capped at 1"), std::string::npos);
}

TEST(OptionsTest, ProgramOptions) {
  CommandLine cl;
  ASSERT_TRUE(
      ParseCommandLine({"--output=/tmp/x.json", "--output-format=normal", "--name=a"}, &cl).ok());
  EXPECT_EQ(cl.program.output_path, "/tmp/x.json");
  EXPECT_EQ(cl.program.format, OutputFormat::kNormal);
  ASSERT_TRUE(ParseCommandLine({"--version"}, &cl).ok());
  EXPECT_TRUE(cl.program.show_version);
}

TEST(OptionsTest, ErrorsNameTheOption) {
  const struct {
    std::vector<std::string> args;
    const char* must_mention;
  } cases[] = {
      {{"--name=a", "--foo=1"}, "foo"},
      {{"--name=a", "--numjobs=4"}, "numjobs' is not supported yet"},
      {{"--name=a", "--rw=randrw"}, "randrw"},
      {{"--name=a", "--rw=trim"}, "trim"},
      {{"--name=a", "--rw=sideways"}, "sideways"},
      {{"--name=a", "--ioengine=libaio"}, "libaio"},
      {{"--name=a", "--bs=0"}, "bs"},
      {{"--name=a", "--bs=4q"}, "bs"},
      {{"--name=a", "--iodepth=0"}, "iodepth"},
      {{"--name=a", "--direct=yes"}, "direct"},
      {{"--name=a", "--runtime=10sec"}, "runtime"},
      {{"--name=a", "--time_based"}, "runtime"},
      {{"--name=a", "--size=50%"}, "size"},
      {{"--name=a", "--filename=/a:/b"}, "filename"},
      {{"--output-format=json+", "--name=a"}, "json+"},
      {{"--rw=read"}, "no job"},
      {{"job.fio"}, "job.fio"},
      {{"-x"}, "-x"},
      {{"--name=a", "--bs"}, "bs"},
      {{"--version=1"}, "version"},
  };
  for (const auto& c : cases) {
    CommandLine cl;
    Status s = ParseCommandLine(c.args, &cl);
    EXPECT_FALSE(s.ok()) << c.must_mention;
    EXPECT_EQ(s.code(), Status::Code::kUsage) << c.must_mention;
    EXPECT_NE(s.message().find(c.must_mention), std::string::npos)
        << "message '" << s.message() << "' should mention " << c.must_mention;
  }
}

TEST(OptionsTest, HelpListsEveryOptionWithItsDefault) {
  const std::string help = HelpText();
  for (const OptionDef& o : JobOptionTable()) {
    EXPECT_NE(help.find("--" + std::string(o.name)), std::string::npos) << o.name;
    if (!o.default_value.empty()) {
      EXPECT_NE(help.find("[default: " + std::string(o.default_value) + "]"), std::string::npos)
          << o.name;
    }
  }
}

}  // namespace
}  // namespace blkgen
