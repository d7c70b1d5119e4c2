#include "options.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

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
  EXPECT_EQ(got.rwmixread, want.rwmixread);
  EXPECT_EQ(got.bssplit, want.bssplit);
  EXPECT_EQ(got.blockalign, want.blockalign);
  EXPECT_EQ(got.numjobs, want.numjobs);
  EXPECT_EQ(got.iodepth_batch_submit, want.iodepth_batch_submit);
  EXPECT_EQ(got.iodepth_batch_complete_min, want.iodepth_batch_complete_min);
  // 0 means "the min" (fio's fix-up makes it so after parsing).
  EXPECT_EQ(std::max(got.iodepth_batch_complete_max, got.iodepth_batch_complete_min),
            std::max(want.iodepth_batch_complete_max, want.iodepth_batch_complete_min));
  EXPECT_EQ(got.startdelay_ns, want.startdelay_ns);
  EXPECT_EQ(got.startdelay_high_ns, want.startdelay_high_ns);
  EXPECT_EQ(got.sqthread_poll, want.sqthread_poll);
  EXPECT_EQ(got.fixedbufs, want.fixedbufs);
  EXPECT_EQ(got.rate, want.rate);
  EXPECT_EQ(got.rate_iops, want.rate_iops);
  EXPECT_EQ(got.thinktime_ns, want.thinktime_ns);
  EXPECT_EQ(got.thinktime_blocks, want.thinktime_blocks);
  EXPECT_EQ(got.fsync_blocks, want.fsync_blocks);
  EXPECT_EQ(got.fdatasync_blocks, want.fdatasync_blocks);
  EXPECT_EQ(got.end_fsync, want.end_fsync);
  EXPECT_EQ(got.distribution.kind, want.distribution.kind);
  EXPECT_EQ(got.distribution.param, want.distribution.param);
  EXPECT_EQ(got.distribution.center, want.distribution.center);
  EXPECT_EQ(got.randseed_given, want.randseed_given);
  EXPECT_EQ(got.randrepeat, want.randrepeat);
  EXPECT_EQ(got.norandommap, want.norandommap);
  EXPECT_EQ(got.group_reporting, want.group_reporting);
  EXPECT_EQ(got.prioclass, want.prioclass);
  EXPECT_EQ(got.prio, want.prio);
  EXPECT_EQ(got.cgroup, want.cgroup);
  EXPECT_EQ(got.cgroup_io_weight, want.cgroup_io_weight);
  EXPECT_EQ(got.cgroup_bfq_weight, want.cgroup_bfq_weight);
  EXPECT_EQ(got.cgroup_io_max, want.cgroup_io_max);
  EXPECT_EQ(got.log_interval_ns, want.log_interval_ns);
  EXPECT_EQ(got.verify, want.verify);
  EXPECT_EQ(got.do_verify, want.do_verify);
  EXPECT_EQ(got.verify_only, want.verify_only);
  EXPECT_EQ(got.trim_percentage, want.trim_percentage);
  EXPECT_EQ(got.trim_backlog, want.trim_backlog);
  EXPECT_EQ(got.trim_backlog_batch, want.trim_backlog_batch);
  EXPECT_EQ(got.trim_verify_zero, want.trim_verify_zero);
  EXPECT_EQ(got.io_size, want.io_size);
  EXPECT_EQ(got.write_iolog, want.write_iolog);
}

// A ParseEnv over in-memory files and variables.
ParseEnv FakeEnv(std::map<std::string, std::string> files,
                 std::map<std::string, std::string> vars = {}) {
  ParseEnv env;
  env.read_file = [files](const std::string& path, std::string* text) {
    auto it = files.find(path);
    if (it == files.end()) return Status::Errno("job file '" + path + "'", 2);
    *text = it->second;
    return Status::Ok();
  };
  env.getenv = [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  return env;
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
  // fio's defaults for the rest.
  EXPECT_EQ(d.rwmixread, 50u);
  EXPECT_EQ(d.numjobs, 1u);
  EXPECT_EQ(d.iodepth_batch_submit, 1u);
  EXPECT_EQ(d.iodepth_batch_complete_min, 1u);
  EXPECT_EQ(d.thinktime_blocks, 1u);
  EXPECT_TRUE(d.randrepeat);
  EXPECT_FALSE(d.randseed_given);
  EXPECT_FALSE(d.norandommap);
  EXPECT_TRUE(d.do_verify);
  EXPECT_EQ(d.verify, VerifyKind::kNone);
  EXPECT_FALSE(d.verify_only);
  EXPECT_EQ(d.trim_percentage, 0u);
  EXPECT_EQ(d.trim_backlog, 0u);
  EXPECT_EQ(d.trim_backlog_batch, 0u);
  EXPECT_TRUE(d.trim_verify_zero);  // fio's default
  EXPECT_EQ(d.io_size, 0u);
  EXPECT_EQ(d.distribution.kind, DistKind::kRandom);
  EXPECT_EQ(d.log_interval_ns, 100000000u);  // blkgen_log_interval
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
         j->randseed_given = true;
         j->rw = RwMode::kRandWrite;
       }},
      {"randrw with rwmixwrite (last of the two wins)",
       {"--name=m", "--rw=randrw", "--rwmixread=10", "--rwmixwrite=30"},
       [](JobSpec* j) {
         j->name = "m";
         j->rw = RwMode::kRandRW;
         j->rwmixread = 70;
       }},
      {"readwrite alias and trims",
       {"--name=m", "--readwrite=randtrim"},
       [](JobSpec* j) {
         j->name = "m";
         j->rw = RwMode::kRandTrim;
       }},
      {"bs: trailing comma keeps the default, ',8k' sets writes and trims",
       {"--name=b", "--bs=,8k"},
       [](JobSpec* j) {
         j->name = "b";
         j->bs = {4096, 8192, 8192};
       }},
      {"bssplit with blanks sharing the rest, per direction",
       {"--name=b", "--bssplit=4k/50:1k/:32k/,4k/90:8k/10"},
       [](JobSpec* j) {
         j->name = "b";
         j->bssplit[0] = {{4096, 50}, {1024, 25}, {32768, 25}};
         j->bssplit[1] = {{4096, 90}, {8192, 10}};
         j->bssplit[2] = {{4096, 90}, {8192, 10}};
       }},
      {"blockalign on random I/O turns the random map off",
       {"--name=a", "--rw=randread", "--ba=64k"},
       [](JobSpec* j) {
         j->name = "a";
         j->rw = RwMode::kRandRead;
         j->blockalign = {65536, 65536, 65536};
         j->norandommap = true;
       }},
      {"numjobs and batching (0 = iodepth, max below min = min)",
       {"--name=n", "--ioengine=libaio", "--iodepth=16", "--numjobs=1", "--iodepth_batch=0",
        "--iodepth_batch_complete_min=4", "--iodepth_batch_complete_max=2"},
       [](JobSpec* j) {
         j->name = "n";
         j->ioengine = EngineKind::kLibaio;
         j->iodepth = 16;
         j->iodepth_batch_submit = 16;
         j->iodepth_batch_complete_min = 4;
         j->iodepth_batch_complete_max = 4;
       }},
      {"batch submit above iodepth is iodepth",
       {"--name=n", "--ioengine=io_uring", "--iodepth=8", "--iodepth_batch_submit=32",
        "--sqthread_poll", "--fixedbufs=1"},
       [](JobSpec* j) {
         j->name = "n";
         j->ioengine = EngineKind::kIoUring;
         j->iodepth = 8;
         j->iodepth_batch_submit = 8;
         j->iodepth_batch_complete_max = 1;
         j->sqthread_poll = true;
         j->fixedbufs = true;
       }},
      {"startdelay range, thinktime in us",
       {"--name=t", "--startdelay=1-3", "--thinktime=250", "--thinktime_blocks=4"},
       [](JobSpec* j) {
         j->name = "t";
         j->startdelay_ns = kSec;
         j->startdelay_high_ns = 3 * kSec;
         j->thinktime_ns = 250000;
         j->thinktime_blocks = 4;
       }},
      {"rate per direction: '1m,' caps reads only",
       {"--name=r", "--rate=1m,"},
       [](JobSpec* j) {
         j->name = "r";
         j->rate = {1 << 20, 0, 0};
       }},
      {"rate_iops for writes and trims",
       {"--name=r", "--rate_iops=,500"},
       [](JobSpec* j) {
         j->name = "r";
         j->rate_iops = {0, 500, 500};
       }},
      {"syncs",
       {"--name=s", "--rw=write", "--fsync=32", "--fdatasync=8", "--end_fsync=1"},
       [](JobSpec* j) {
         j->name = "s";
         j->rw = RwMode::kWrite;
         j->fsync_blocks = 32;
         j->fdatasync_blocks = 8;
         j->end_fsync = true;
       }},
      {"zipf turns the random map off",
       {"--name=z", "--rw=randread", "--random_distribution=zipf:1.2"},
       [](JobSpec* j) {
         j->name = "z";
         j->rw = RwMode::kRandRead;
         j->distribution.kind = DistKind::kZipf;
         j->distribution.param = 1.2;
         j->norandommap = true;
       }},
      {"pareto default h, normal with center",
       {"--name=z", "--rw=randread", "--random_distribution=normal:5:0.25"},
       [](JobSpec* j) {
         j->name = "z";
         j->rw = RwMode::kRandRead;
         j->distribution.kind = DistKind::kNormal;
         j->distribution.param = 5;
         j->distribution.center = 0.25;
         j->norandommap = true;
       }},
      {"randrepeat, norandommap flag, group_reporting",
       {"--name=g", "--randrepeat=0", "--norandommap", "--group_reporting"},
       [](JobSpec* j) {
         j->name = "g";
         j->randrepeat = false;
         j->norandommap = true;
         j->group_reporting = true;
       }},
      {"percentile_list is sorted, duplicates dropped",
       {"--name=p", "--percentile_list=99.9:50:99:50"},
       [](JobSpec* j) {
         j->name = "p";
         j->percentiles = {50, 99, 99.9};
       }},
      {"io priority",
       {"--name=p", "--prioclass=3", "--prio=7"},
       [](JobSpec* j) {
         j->name = "p";
         j->prioclass = 3;
         j->prio = 7;
       }},
      {"cgroup settings",
       {"--name=c", "--cgroup=/blklab/a/", "--cgroup_io_weight=500", "--cgroup_bfq_weight=200",
        "--cgroup_io_max=riops=1000,wbps=10m"},
       [](JobSpec* j) {
         j->name = "c";
         j->cgroup = "blklab/a";
         j->cgroup_io_weight = 500;
         j->cgroup_bfq_weight = 200;
         j->cgroup_io_max.riops = 1000;
         j->cgroup_io_max.wbps = 10 << 20;
       }},
      {"log interval, verify, iolog",
       {"--name=v", "--rw=randwrite", "--blkgen_log_interval=250", "--verify=crc32c",
        "--do_verify=0", "--write_iolog=/tmp/x.log"},
       [](JobSpec* j) {
         j->name = "v";
         j->rw = RwMode::kRandWrite;
         j->log_interval_ns = 250000000;
         j->verify = VerifyKind::kCrc32c;
         j->do_verify = false;
         j->write_iolog = "/tmp/x.log";
       }},
      {"verify with trims, io_size",
       {"--name=t", "--rw=randwrite", "--size=1g", "--io_size=3g", "--verify=crc32c",
        "--trim_percentage=20", "--trim_backlog=64", "--trim_backlog_batch=8",
        "--trim_verify_zero=0"},
       [](JobSpec* j) {
         j->name = "t";
         j->rw = RwMode::kRandWrite;
         j->size = 1ULL << 30;
         j->io_size = 3ULL << 30;
         j->verify = VerifyKind::kCrc32c;
         j->trim_percentage = 20;
         j->trim_backlog = 64;
         j->trim_backlog_batch = 8;
         j->trim_verify_zero = false;
       }},
      {"verify_only, io_limit",
       {"--name=o", "--rw=write", "--io_limit=64m", "--verify=crc32c", "--verify_only"},
       [](JobSpec* j) {
         j->name = "o";
         j->rw = RwMode::kWrite;
         j->io_size = 64ULL << 20;
         j->verify = VerifyKind::kCrc32c;
         j->verify_only = true;
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
      {{"--name=a", "--stonewall"}, "stonewall' is not supported yet"},
      {{"--name=a", "--rw=trimwrite"}, "trimwrite"},
      {{"--name=a", "--rw=sideways"}, "sideways"},
      {{"--name=a", "--ioengine=posixaio"}, "posixaio"},
      {{"--name=a", "--rwmixread=101"}, "rwmixread"},
      {{"--name=a", "--bssplit=4k/60:8k/60"}, "more than 100"},
      {{"--name=a", "--bssplit=4k/60:8k/30"}, "less than 100"},
      {{"--name=a", "--bssplit=4k/10,8k/100,1k/100,2k/100"}, "at most 3"},
      {{"--name=a", "--numjobs=0"}, "numjobs"},
      {{"--name=a", "--iodepth_batch_submit=x"}, "iodepth_batch_submit"},
      {{"--name=a", "--startdelay=5-1"}, "startdelay"},
      {{"--name=a", "--sqthread_poll"}, "sqthread_poll needs ioengine=io_uring"},
      {{"--name=a", "--ioengine=libaio", "--fixedbufs=1"}, "fixedbufs needs ioengine=io_uring"},
      {{"--name=a", "--rate=1m", "--rate_iops=100"}, "mutually exclusive"},
      {{"--name=a", "--rate=1m,", "--rate_iops=,100"}, "mutually exclusive"},
      {{"--name=a", "--thinktime=1q"}, "thinktime"},
      {{"--name=a", "--random_distribution=zipf:1"}, "theta"},
      {{"--name=a", "--random_distribution=pareto:1.5"}, "pareto"},
      {{"--name=a", "--random_distribution=normal"}, "normal"},
      {{"--name=a", "--random_distribution=zoned:50/50"}, "not supported yet"},
      {{"--name=a", "--random_distribution=zipf:1.2:2"}, "center"},
      {{"--name=a", "--percentile_list=0"}, "percentile_list"},
      {{"--name=a", "--percentile_list=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21"},
       "at most 20"},
      {{"--name=a", "--prio=8"}, "prio"},
      {{"--name=a", "--prioclass=4"}, "prioclass"},
      {{"--name=a", "--cgroup=../x"}, "cgroup"},
      {{"--name=a", "--cgroup_io_weight=100"}, "need cgroup="},
      {{"--name=a", "--cgroup=x", "--cgroup_io_max=riops"}, "cgroup_io_max"},
      {{"--name=a", "--cgroup=x", "--cgroup_io_max=foo=1"}, "unknown key 'foo'"},
      {{"--name=a", "--cgroup=x", "--cgroup_io_weight=0"}, "cgroup_io_weight"},
      {{"--name=a", "--blkgen_log_interval=10us"}, "blkgen_log_interval"},
      {{"--name=a", "--verify=md5"}, "verify=md5"},
      {{"--name=a", "--verify=crc32c", "--rw=randrw", "--bs=4k,8k"}, "same bs"},
      {{"--name=a", "--verify=crc32c", "--rw=write", "--bssplit=4k/50:8k/50"}, "bssplit"},
      {{"--name=a", "--verify=crc32c", "--rw=randwrite", "--ba=1k"}, "multiple of bs"},
      {{"--name=a", "--size=1k", "--bs=4k"}, "smaller than the block size"},
      {{"--name=a", "--io_size=1k", "--bs=4k"}, "io_size=1024 is smaller"},
      {{"--name=a", "--trim_percentage=101"}, "trim_percentage"},
      {{"--name=a", "--trim_backlog=-1"}, "trim_backlog"},
      {{"--name=a", "--trim_verify_zero=2"}, "trim_verify_zero"},
      {{"--name=a", "--rw=write", "--verify_only"}, "verify_only needs verify="},
      {{"--name=a", "--rw=read", "--verify=crc32c", "--verify_only"}, "verify_only needs"},
      {{"--name=a", "--rw=write", "--verify=crc32c", "--verify_only", "--runtime=1",
        "--time_based"},
       "time_based"},
      {{"--name=a", "--write_iolog=/tmp/l", "--numjobs=2"}, "several jobs"},
      {{"--name=a", "--write_iolog=/tmp/l", "--name=b", "--write_iolog=/tmp/l"}, "several jobs"},
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
      {{"job.fio"}, "job.fio"},  // no such file
      {{"a.fio", "b.fio"}, "several job files"},
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

TEST(OptionsTest, NotesForFioAdjustments) {
  const struct {
    std::vector<std::string> args;
    const char* note;
  } cases[] = {
      {{"--name=a", "--rw=randread", "--ba=8k"}, "random map turned off"},
      {{"--name=a", "--rw=read", "--ba=8k"}, "random I/O only"},
      {{"--name=a", "--rw=read", "--fsync=4"}, "does not write"},
      {{"--name=a", "--thinktime_blocks=4"}, "without thinktime"},
      {{"--name=a", "--randseed=1", "--randrepeat=0"}, "randrepeat has no effect"},
      {{"--name=a", "--rw=write", "--trim_percentage=10", "--trim_backlog=8"}, "without verify="},
      {{"--name=a", "--rw=read", "--verify=crc32c", "--trim_percentage=10", "--trim_backlog=8"},
       "does not write"},
      {{"--name=a", "--rw=write", "--verify=crc32c", "--trim_percentage=10"},
       "without trim_backlog"},
      {{"--name=a", "--rw=write", "--verify=crc32c", "--trim_backlog=10"},
       "without trim_percentage"},
      {{"--name=a", "--rw=write", "--verify=crc32c", "--verify_only", "--runtime=1"},
       "runtime has no effect"},
      {{"--name=a", "--rw=write", "--verify=crc32c", "--verify_only", "--do_verify=0"},
       "do_verify=0 has no effect"},
  };
  for (const auto& c : cases) {
    CommandLine cl;
    ASSERT_TRUE(ParseCommandLine(c.args, &cl).ok()) << c.note;
    ASSERT_EQ(cl.notes.size(), 1u) << c.note;
    EXPECT_NE(cl.notes[0].find(c.note), std::string::npos) << cl.notes[0];
  }
}

TEST(OptionsTest, NumjobsMakesClonesWithFiosFileNames) {
  CommandLine cl;
  ASSERT_TRUE(ParseCommandLine({"--name=n", "--numjobs=3", "--size=1m", "--name=m"}, &cl).ok());
  ASSERT_EQ(cl.jobs.size(), 4u);
  for (uint32_t c = 0; c < 3; ++c) {
    EXPECT_EQ(cl.jobs[c].name, "n");  // fio keeps the name; the file tells clones apart
    EXPECT_EQ(cl.jobs[c].clone, c);
    EXPECT_EQ(cl.jobs[c].EffectiveFilename(), "n." + std::to_string(c) + ".0");
  }
  EXPECT_EQ(cl.jobs[3].EffectiveFilename(), "m.0.0");
}

TEST(JobFileTest, GlobalSectionsApplyToTheJobsBelowThem) {
  const std::string file =
      "; a comment\n"
      "# another\n"
      "[global]\n"
      "rw=randread\n"
      "size = 128m\n"
      "time_based\n"
      "runtime=2\n"
      "\n"
      "[job1]\n"
      "bs=8k\n"
      "[global]\n"
      "ioengine=io_uring\n"
      "[job2]\n"
      "rw=write\n";
  CommandLine cl;
  Status s =
      ParseCommandLine({"--output-format=json", "jobs.fio"}, FakeEnv({{"jobs.fio", file}}), &cl);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(cl.jobs.size(), 2u);
  const JobSpec& j1 = cl.jobs[0];
  EXPECT_EQ(j1.name, "job1");
  EXPECT_EQ(j1.rw, RwMode::kRandRead);
  EXPECT_EQ(j1.size, 128u << 20);
  EXPECT_EQ(j1.bs[0], 8192u);
  EXPECT_TRUE(j1.time_based);
  EXPECT_EQ(j1.ioengine, EngineKind::kPsync);  // the second [global] is below job1
  const JobSpec& j2 = cl.jobs[1];
  EXPECT_EQ(j2.rw, RwMode::kWrite);
  EXPECT_EQ(j2.bs[0], 4096u);
  EXPECT_EQ(j2.ioengine, EngineKind::kIoUring);
  // As fio: job options are the section's own, name not among them.
  EXPECT_EQ(j1.given, (std::vector<GivenOption>{{"bs", "8k"}}));
  EXPECT_EQ(cl.global_options, (std::vector<GivenOption>{{"rw", "randread"},
                                                         {"size", "128m"},
                                                         {"time_based", std::nullopt},
                                                         {"runtime", "2"},
                                                         {"ioengine", "io_uring"}}));
}

TEST(JobFileTest, MixesWithTheCommandLineLikeFio) {
  // Checked against fio 3.33: command-line globals apply to every job, the
  // file's [global] overrides them for the file's jobs, command-line jobs
  // come first and do not see the file's [global].
  const std::string file = "[global]\nruntime=2\nsize=1M\n[a]\nrw=read\n";
  CommandLine cl;
  Status s = ParseCommandLine(
      {"--runtime=1", "--bs=16k", "--time_based", "jobs.fio", "--name=cl", "--rw=write"},
      FakeEnv({{"jobs.fio", file}}), &cl);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(cl.jobs.size(), 2u);
  EXPECT_EQ(cl.jobs[0].name, "cl");
  EXPECT_EQ(cl.jobs[0].runtime_ns, kSec);
  EXPECT_EQ(cl.jobs[0].size, 0u);
  EXPECT_EQ(cl.jobs[0].bs[0], 16384u);
  EXPECT_EQ(cl.jobs[1].name, "a");
  EXPECT_EQ(cl.jobs[1].runtime_ns, 2 * kSec);
  EXPECT_EQ(cl.jobs[1].size, 1u << 20);
  EXPECT_EQ(cl.jobs[1].bs[0], 16384u);
  EXPECT_TRUE(cl.jobs[1].time_based);
}

TEST(JobFileTest, ExpandsEnvironmentVariables) {
  const std::string file = "[w]\nrw=randwrite\nsize=${SIZE}\nnumjobs=${NUMJOBS}\nbs=4k${UNSET}\n";
  CommandLine cl;
  Status s = ParseCommandLine({"w.fio"},
                              FakeEnv({{"w.fio", file}}, {{"SIZE", "64m"}, {"NUMJOBS", "2"}}), &cl);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(cl.jobs.size(), 2u);
  EXPECT_EQ(cl.jobs[1].size, 64u << 20);
  EXPECT_EQ(cl.jobs[1].clone, 1u);
}

TEST(JobFileTest, ErrorsNameFileAndLine) {
  const struct {
    std::string text;
    const char* must_mention;
  } cases[] = {
      {"[a]\nbogus=1\n", "f.fio:2: unknown option 'bogus'"},
      {"[a]\nbs=4q\n", "f.fio:2: bs=4q"},
      {"rw=read\n[a]\n", "f.fio:1: option outside a section"},
      {"[a\n", "f.fio:1: section header without ']'"},
      {"[a]\ninclude other.fio\n", "f.fio:2: 'include' is not supported"},
      {"[a]\nsize=${X\n", "f.fio:2: unterminated"},
      {"[a]\nsize=8*$mb_memory\n", "$mb_memory"},
      {"[a]\nrw\n", "f.fio:2: option 'rw' needs a value"},
      {"[global]\nrw=read\n", "defines no job"},
      {"[a]\nstonewall\n", "f.fio:2: option 'stonewall' is not supported yet"},
      // Binary files get one line that does not quote their bytes.
      {std::string("[a]\nbs=4k\0\xff\n", 11),
       "f.fio:2: not a text job file: control character 0x00 at column 6"},
      {"\x8a\x8f" "51\n", "f.fio:1: not a text job file: byte 0x8a at column 1 is not UTF-8"},
      {"; caf\xc3\xa9\n[a]\nbogus=1\n", "f.fio:3: unknown option 'bogus'"},  // UTF-8 is text
  };
  for (const auto& c : cases) {
    CommandLine cl;
    Status s = ParseCommandLine({"f.fio"}, FakeEnv({{"f.fio", c.text}}), &cl);
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
