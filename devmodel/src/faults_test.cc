#include "devmodel/faults.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

#include "devmodel/devmodel.h"
#include "devmodel/profile.h"

namespace devmodel {
namespace {

constexpr TimeNs kMs = 1000000;
constexpr TimeNs kLatencyNs = 10000;  // the profile below: every request takes 10 us

std::string FixedProfile(const std::string& faults) {
  return "[device]\nmodel = \"zero\"\n[zero]\ncapacity_bytes = 1073741824\n"
         "latency_us = 10.0\n" +
         faults;
}

std::unique_ptr<Device> Load(const std::string& text) {
  std::string error;
  auto d = LoadProfileFromString(text, "test.toml", 1, &error);
  EXPECT_NE(d, nullptr) << error;
  return d;
}

// Opens `text` through the C ABI, as QEMU does a profile file (seed 1).
devmodel_t* OpenText(const std::string& text, char** err) {
  char path[] = "/tmp/devmodel-faults-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return nullptr;
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  devmodel_t* m = written ? devmodel_open(path, 1, err) : nullptr;
  unlink(path);
  return m;
}

// A desktop HDD (its queue polls) with fault `f` from origin 0 in *d, and
// the final answer to a 4 KiB read of block 0 (tag 7) submitted at 0,
// polled whenever the model asks.
Completion HddReadWith(const Fault& f, std::unique_ptr<FaultyDevice>* d) {
  std::string error;
  const std::string path = std::string(DEVMODEL_PROFILE_DIR) + "/hdd-7200-desktop-1t.toml";
  *d = std::make_unique<FaultyDevice>(LoadProfile(path, 3, &error), FaultSchedule({f}));
  (*d)->SetOrigin(0);
  Request r;
  r.length_bytes = 4096;
  r.tag = 7;
  Completion c = (*d)->Submit(r, 0);
  while (!c.final) c = (*d)->Poll(7, c.deadline_ns);
  return c;
}

Request Read(std::uint64_t tag) {
  Request r;
  r.op = Op::kRead;
  r.offset_bytes = 0;
  r.length_bytes = 4096;
  r.tag = tag;
  return r;
}

TEST(FaultsTest, NoFaultBeforeTheOrigin) {
  auto d = Load(FixedProfile("[[fault]]\nkind = \"stall\"\nat_ms = 0\nduration_ms = 50\n"));
  // Without an origin the window [origin, origin + 50 ms) does not exist.
  EXPECT_EQ(d->Submit(Read(1), 1000).deadline_ns, 1000 + kLatencyNs);
}

TEST(FaultsTest, StallMovesDeadlinesInTheWindowToItsEnd) {
  auto d = Load(FixedProfile("[[fault]]\nkind = \"stall\"\nat_ms = 100\nduration_ms = 50\n"));
  FaultyDevice* f = FaultyDevice::Of(d.get());
  ASSERT_NE(f, nullptr);
  const TimeNs origin = 7 * kMs;
  f->SetOrigin(origin);
  const TimeNs s = origin + 100 * kMs, e = s + 50 * kMs;
  // Completes just before the window: untouched.
  EXPECT_EQ(d->Submit(Read(1), s - kLatencyNs - 1).deadline_ns, s - 1);
  // Completes exactly at the start: held to the end.
  EXPECT_EQ(d->Submit(Read(2), s - kLatencyNs).deadline_ns, e);
  // Submitted inside, completing inside: the end.
  EXPECT_EQ(d->Submit(Read(3), s + 20 * kMs).deadline_ns, e);
  // Completes exactly at the end (submitted inside): untouched.
  EXPECT_EQ(d->Submit(Read(4), e - kLatencyNs).deadline_ns, e);
  // After the window: untouched.
  EXPECT_EQ(d->Submit(Read(5), e).deadline_ns, e + kLatencyNs);
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["fault_origin_ns"], origin);
  ASSERT_EQ(j["faults"].size(), 1u);
  EXPECT_EQ(j["faults"][0]["kind"], "stall");
  EXPECT_EQ(j["faults"][0]["start_ns"], s);
  EXPECT_EQ(j["faults"][0]["end_ns"], e);
  EXPECT_EQ(j["faults"][0]["requests"], 2);
  EXPECT_FALSE(j["faults"][0].contains("factor"));
  EXPECT_EQ(j["model"], "zero");  // the inner model's counters are kept
}

TEST(FaultsTest, SlowMultipliesServiceTimesSubmittedInTheWindow) {
  auto d = Load(
      FixedProfile("[[fault]]\nkind = \"slow\"\nat_ms = 1\nduration_ms = 2\nfactor = 4.5\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  const TimeNs s = 1 * kMs, e = 3 * kMs;
  EXPECT_EQ(d->Submit(Read(1), s - 1).deadline_ns, s - 1 + kLatencyNs);  // submitted before
  EXPECT_EQ(d->Submit(Read(2), s).deadline_ns, s + kLatencyNs * 9 / 2);
  EXPECT_EQ(d->Submit(Read(3), e - 1).deadline_ns, e - 1 + kLatencyNs * 9 / 2);
  EXPECT_EQ(d->Submit(Read(4), e).deadline_ns, e + kLatencyNs);  // submitted after
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["factor"], 4.5);
  EXPECT_EQ(j["faults"][0]["requests"], 2);
}

TEST(FaultsTest, ASlowedDeadlineThatLandsInAStallWaitsForItsEnd) {
  FaultSchedule schedule({{FaultKind::kStall, 2 * kMs, 1 * kMs, 1000000},
                          {FaultKind::kSlow, 0, 10 * kMs, 3000000}});
  schedule.SetOrigin(kMs);
  // Submitted at 2.5 ms, 400 us of service: slow makes it 2.5 + 1.2 = 3.7 ms,
  // in the stall [3, 4) ms, which holds it to 4 ms.
  EXPECT_EQ(schedule.Apply(2500000, 2900000), 4 * kMs);
  // The same before the origin moved: untouched by the stall, slowed.
  schedule.SetOrigin(10 * kMs);
  EXPECT_EQ(schedule.Apply(2500000, 2900000), 2900000u);
}

TEST(FaultsTest, HddPollsUnchangedAndTheFinalDeadlineIsSlowedFromItsSubmission) {
  std::string error;
  const std::string path = std::string(DEVMODEL_PROFILE_DIR) + "/hdd-7200-desktop-1t.toml";
  auto plain = LoadProfile(path, 3, &error);
  ASSERT_NE(plain, nullptr) << error;
  ASSERT_FALSE(plain->deadlines_final());
  FaultSchedule schedule({{FaultKind::kSlow, 0, 1000 * kMs, 2000000}});
  FaultyDevice slow(LoadProfile(path, 3, &error), schedule);
  slow.SetOrigin(0);
  // Two queued reads far apart: the second's first deadline is a poll time.
  Request a = Read(1), b = Read(2);
  b.offset_bytes = 500ull << 30;
  const TimeNs t0 = 5 * kMs, t1 = t0 + 1000;
  const Completion pa = plain->Submit(a, t0), pb = plain->Submit(b, t1);
  const Completion sa = slow.Submit(a, t0), sb = slow.Submit(b, t1);
  auto final_of = [](Device* d, std::uint64_t tag, Completion c) {
    while (!c.final) c = d->Poll(tag, c.deadline_ns);
    return c.deadline_ns;
  };
  ASSERT_FALSE(pb.final);  // queued behind a: a poll time, which passes unchanged
  EXPECT_EQ(sb.deadline_ns, pb.deadline_ns);
  // Final deadlines: the unfaulted service time doubled, from each submission.
  const TimeNs da = final_of(plain.get(), 1, pa), db = final_of(plain.get(), 2, pb);
  EXPECT_EQ(final_of(&slow, 1, sa), t0 + 2 * (da - t0));
  EXPECT_EQ(final_of(&slow, 2, sb), t1 + 2 * (db - t1));
}

TEST(FaultsTest, AnUnknownTagPolledInAStallIsStillNow) {
  auto d = Load(FixedProfile("[[fault]]\nkind = \"stall\"\nat_ms = 0\nduration_ms = 50\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  const Completion c = d->Poll(99, 10 * kMs);
  EXPECT_EQ(c.deadline_ns, 10 * kMs);
  EXPECT_TRUE(c.final);
}

TEST(FaultsTest, ProfileErrorsNameTheKey) {
  struct Case {
    const char* faults;
    const char* message;
  } cases[] = {
      {"[[fault]]\nkind = \"brownout\"\nduration_ms = 1\n",
       "test.toml:7: key 'fault.kind' must be one of \"stall\" \"slow\" \"media_error\" "
       "\"timeout\" \"reset\", got \"brownout\""},
      {"[[fault]]\nkind = \"reset\"\nat_ms = 1\nduration_ms = 1\n",
       "test.toml:9: key 'fault.duration_ms' is not for kind \"reset\" (the device stays failed "
       "until the host resets it)"},
      {"[[fault]]\nkind = \"reset\"\nlba_start = 0\nlba_count = 8\n",
       "test.toml:8: key 'fault.lba_start' is for kind \"media_error\" or \"timeout\" only"},
      {"[[fault]]\nkind = \"reset\"\nwrites = true\n",
       "test.toml:8: key 'fault.writes' is for kind \"media_error\" or \"timeout\" only"},
      {"[[fault]]\nkind = \"reset\"\nfactor = 2\n",
       "test.toml:8: key 'fault.factor' is for kind \"slow\" only"},
      {"[[fault]]\nkind = \"timeout\"\n",
       "test.toml:6: key 'fault.duration_ms' must be a number of ms > 0 (at least 1 ns)"},
      {"[[fault]]\nkind = \"timeout\"\nduration_ms = 1\nlba_start = 3\n",
       "test.toml:6: a \"timeout\" fault takes both 'fault.lba_start' and 'fault.lba_count' (a "
       "range) or neither (every block)"},
      {"[[fault]]\nkind = \"timeout\"\nduration_ms = 1\nretry_ms = 3\n",
       "test.toml:9: key 'fault.retry_ms' is for kind \"media_error\" only"},
      {"[[fault]]\nkind = \"timeout\"\nduration_ms = 1\nfactor = 3\n",
       "test.toml:9: key 'fault.factor' is for kind \"slow\" only"},
      {"[[fault]]\nkind = \"timeout\"\nduration_ms = 1\nlba_start = 2097151\nlba_count = 2\n",
       "test.toml:9: key 'fault.lba_start' + 'fault.lba_count' (2097151 + 2) ends past the "
       "device's 2097152 logical blocks of 512 bytes"},
      {"[[fault]]\nkind = \"stall\"\nduration_ms = 1\nfactor = 2\n",
       "test.toml:9: key 'fault.factor' is for kind \"slow\" only"},
      {"[[fault]]\nkind = \"slow\"\nduration_ms = 1\nfactor = 1\n",
       "test.toml:9: key 'fault.factor' must be > 1 on a \"slow\" fault (service times "
       "multiplied by it)"},
      {"[[fault]]\nkind = \"stall\"\nduration_ms = 0\n",
       "test.toml:8: key 'fault.duration_ms' must be a number of ms > 0 (at least 1 ns)"},
      {"[[fault]]\nkind = \"stall\"\nat_ms = -1\nduration_ms = 1\n",
       "test.toml:8: key 'fault.at_ms' must be a number in [0, 1000000000] ms after the origin "
       "(default 0), got -1"},
      {"[[fault]]\nkind = \"stall\"\nduration_ms = 1\nwhen = 3\n",
       "test.toml:9: unknown key 'fault.when' (allowed in [[fault]]: kind, at_ms, "
       "after_requests, probability, duration_ms, factor, lba_start, lba_count, retry_ms, "
       "writes)"},
      {"[[fault]]\nduration_ms = 1\n", "test.toml:6: missing key 'fault.kind' (one of \"stall\" "
                                       "\"slow\" \"media_error\" \"timeout\" \"reset\")"},
      {"[[fault]]\nkind = \"media_error\"\nlba_start = 0\n",
       "test.toml:6: missing key 'fault.lba_count' (blocks that fail, from lba_start)"},
      {"[[fault]]\nkind = \"media_error\"\nlba_count = 8\n",
       "test.toml:6: missing key 'fault.lba_start' (the first block that fails)"},
      {"[[fault]]\nkind = \"stall\"\nduration_ms = 1\nlba_start = 3\n",
       "test.toml:9: key 'fault.lba_start' is for kind \"media_error\" or \"timeout\" only"},
      {"[[fault]]\nkind = \"media_error\"\nlba_start = 0\nlba_count = 0\n",
       "test.toml:9: key 'fault.lba_count' must be an integer in [1, 1152921504606846976] "
       "logical blocks (media_error; timeout: absent = every block), got 0"},
      // 1 GiB of 512-byte blocks: 2097152 blocks.
      {"[[fault]]\nkind = \"media_error\"\nlba_start = 2097150\nlba_count = 3\n",
       "test.toml:8: key 'fault.lba_start' + 'fault.lba_count' (2097150 + 3) ends past the "
       "device's 2097152 logical blocks of 512 bytes"},
      // When: one of at_ms, after_requests, probability.
      {"[[fault]]\nkind = \"stall\"\nat_ms = 1\nafter_requests = 5\nduration_ms = 1\n",
       "test.toml:9: key 'fault.after_requests' cannot be given with 'fault.at_ms' (a fault "
       "starts at one of at_ms, after_requests, probability)"},
      {"[[fault]]\nkind = \"timeout\"\nafter_requests = 5\nprobability = 0.5\n",
       "test.toml:9: key 'fault.probability' cannot be given with 'fault.after_requests' (a "
       "fault starts at one of at_ms, after_requests, probability)"},
      {"[[fault]]\nkind = \"media_error\"\nat_ms = 0\nprobability = 0.5\n",
       "test.toml:9: key 'fault.probability' cannot be given with 'fault.at_ms' (a fault "
       "starts at one of at_ms, after_requests, probability)"},
      {"[[fault]]\nkind = \"stall\"\nafter_requests = -1\nduration_ms = 1\n",
       "test.toml:8: key 'fault.after_requests' must be an integer in [0, 1000000000000] "
       "requests since the origin: the fault starts at the next one, got -1"},
      {"[[fault]]\nkind = \"stall\"\nafter_requests = 1.5\nduration_ms = 1\n",
       "test.toml:8: key 'fault.after_requests' must be an integer in [0, 1000000000000] "
       "requests since the origin: the fault starts at the next one, got a float"},
      {"[[fault]]\nkind = \"stall\"\nafter_requests = 3\n",
       "test.toml:6: key 'fault.duration_ms' must be a number of ms > 0 (at least 1 ns)"},
      {"[[fault]]\nkind = \"reset\"\nafter_requests = 3\nduration_ms = 1\n",
       "test.toml:9: key 'fault.duration_ms' is not for kind \"reset\" (the device stays "
       "failed until the host resets it)"},
      {"[[fault]]\nkind = \"stall\"\nprobability = 0.5\nduration_ms = 1\n",
       "test.toml:8: key 'fault.probability' is for kind \"media_error\" or \"timeout\" only (it "
       "picks single requests; stall, slow and reset are windows: start them with at_ms or "
       "after_requests)"},
      {"[[fault]]\nkind = \"slow\"\nprobability = 0.5\nduration_ms = 1\nfactor = 2\n",
       "test.toml:8: key 'fault.probability' is for kind \"media_error\" or \"timeout\" only (it "
       "picks single requests; stall, slow and reset are windows: start them with at_ms or "
       "after_requests)"},
      {"[[fault]]\nkind = \"reset\"\nprobability = 0.5\n",
       "test.toml:8: key 'fault.probability' is for kind \"media_error\" or \"timeout\" only (it "
       "picks single requests; stall, slow and reset are windows: start them with at_ms or "
       "after_requests)"},
      {"[[fault]]\nkind = \"timeout\"\nprobability = 0\n",
       "test.toml:8: key 'fault.probability' must be > 0 (the chance per request)"},
      {"[[fault]]\nkind = \"timeout\"\nprobability = 1.5\n",
       "test.toml:8: key 'fault.probability' must be a number in [0, 1] per request, > 0 "
       "(media_error and timeout only; seeded), got 1.5"},
      {"[[fault]]\nkind = \"timeout\"\nprobability = \"often\"\n",
       "test.toml:8: key 'fault.probability' must be a number in [0, 1] per request, > 0 "
       "(media_error and timeout only; seeded), got a string"},
      {"[[fault]]\nkind = \"media_error\"\nprobability = 0.1\nduration_ms = 5\n",
       "test.toml:9: key 'fault.duration_ms' is not for a fault with 'fault.probability' (it "
       "picks requests from the origin to the end of the run)"},
      {"[[fault]]\nkind = \"media_error\"\nprobability = 0.1\nlba_start = 5\n",
       "test.toml:6: a \"media_error\" fault with 'fault.probability' takes both "
       "'fault.lba_start' and 'fault.lba_count' (a range) or neither (every block)"},
  };
  for (const Case& c : cases) {
    std::string error;
    EXPECT_EQ(LoadProfileFromString(FixedProfile(c.faults), "test.toml", 1, &error), nullptr);
    EXPECT_EQ(error, c.message) << c.faults;
    std::string check_error;
    EXPECT_FALSE(CheckProfileFromString(FixedProfile(c.faults), "test.toml", nullptr,
                                        &check_error));
    EXPECT_EQ(check_error, error);
  }
}

TEST(FaultsTest, CApiSetsTheOriginAndReportsTheFaults) {
  char* err = nullptr;
  devmodel_t* m =
      OpenText(FixedProfile("[[fault]]\nkind = \"stall\"\nat_ms = 1\nduration_ms = 2\n"), &err);
  ASSERT_NE(m, nullptr) << err;
  devmodel_request r = {DEVMODEL_OP_READ, 0, 0, 4096, 1};
  devmodel_completion c;
  devmodel_submit(m, &r, 1500000, &c, &err);  // no origin yet: no stall
  EXPECT_EQ(c.deadline_ns, 1500000 + kLatencyNs);
  devmodel_set_origin(m, 1600000);
  r.tag = 2;
  devmodel_submit(m, &r, 2600000, &c, &err);  // in [2.6, 4.6) ms
  EXPECT_EQ(c.deadline_ns, 4600000u);
  EXPECT_EQ(c.final, 1);
  char* json = devmodel_counters_json(m, &err);
  ASSERT_NE(json, nullptr);
  const auto j = nlohmann::json::parse(json);
  devmodel_free(json);
  EXPECT_EQ(j["fault_origin_ns"], 1600000);
  EXPECT_EQ(j["faults"][0]["start_ns"], 2600000);
  EXPECT_EQ(j["faults"][0]["end_ns"], 4600000);
  EXPECT_EQ(j["faults"][0]["requests"], 1);
  EXPECT_EQ(j["service_ns"]["read"]["max"], 2000000);  // the stalled read's service time
  devmodel_close(m);
}

TEST(FaultsTest, MediaErrorFailsReadsThatTouchTheRangeAfterTheRetryTime) {
  // Blocks [100, 108) of 512 bytes: bytes [51200, 55296).
  auto d = Load(FixedProfile(
      "[[fault]]\nkind = \"media_error\"\nlba_start = 100\nlba_count = 8\nretry_ms = 2\n"));
  FaultyDevice::Of(d.get())->SetOrigin(5 * kMs);
  auto at = [](std::uint64_t offset, std::uint64_t length, Op op = Op::kRead) {
    Request r;
    r.op = op;
    r.offset_bytes = offset;
    r.length_bytes = length;
    return r;
  };
  // Before the origin: no fault.
  Completion c = d->Submit(at(51200, 4096), kMs);
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_EQ(c.deadline_ns, kMs + kLatencyNs);
  const TimeNs t = 6 * kMs;
  // Inside, overlapping the start, overlapping the end: fail after 2 ms.
  for (auto r : {at(51200, 4096), at(51200 - 512, 1024), at(55296 - 512, 4096)}) {
    c = d->Submit(r, t);
    EXPECT_EQ(c.status, Status::kMediaError) << r.offset_bytes;
    EXPECT_EQ(c.deadline_ns, t + kLatencyNs + 2 * kMs);
  }
  // Just before and just after the range, a write, a flush: succeed.
  for (auto r : {at(51200 - 4096, 4096), at(55296, 4096), at(51200, 4096, Op::kWrite),
                 at(0, 0, Op::kFlush)}) {
    c = d->Submit(r, t);
    EXPECT_EQ(c.status, Status::kOk) << r.offset_bytes;
    EXPECT_EQ(c.deadline_ns, t + kLatencyNs);
  }
  // No duration_ms: to the end of the run.
  EXPECT_EQ(d->Submit(at(51200, 512), 1000000 * kMs).status, Status::kMediaError);
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["kind"], "media_error");
  EXPECT_EQ(j["faults"][0]["requests"], 4);
  EXPECT_EQ(j["faults"][0]["lba_start"], 100);
  EXPECT_EQ(j["faults"][0]["lba_count"], 8);
  EXPECT_EQ(j["faults"][0]["retry_ns"], 2 * kMs);
  EXPECT_EQ(j["faults"][0]["writes"], false);
  EXPECT_EQ(j["faults"][0]["start_ns"], 5 * kMs);
  EXPECT_TRUE(j["faults"][0]["end_ns"].is_null());
}

TEST(FaultsTest, MediaErrorInAWindowFailsWritesWhenAsked) {
  auto d = Load(FixedProfile(
      "[[fault]]\nkind = \"media_error\"\nat_ms = 1\nduration_ms = 2\nlba_start = 0\n"
      "lba_count = 1\nwrites = true\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  Request w;
  w.op = Op::kWrite;
  w.length_bytes = 4096;
  EXPECT_EQ(d->Submit(w, kMs - 1).status, Status::kOk);
  EXPECT_EQ(d->Submit(w, kMs).status, Status::kMediaError);
  EXPECT_EQ(d->Submit(w, 3 * kMs - 1).status, Status::kMediaError);
  EXPECT_EQ(d->Submit(w, 3 * kMs).status, Status::kOk);
}

TEST(FaultsTest, CApiResultCarriesTheMediaErrorAndTheOldCallsStillWork) {
  char* err = nullptr;
  devmodel_t* m = OpenText(
      FixedProfile(
          "[[fault]]\nkind = \"media_error\"\nlba_start = 8\nlba_count = 8\nretry_ms = 1\n"),
      &err);
  ASSERT_NE(m, nullptr) << err;
  devmodel_set_origin(m, 0);
  devmodel_request r = {DEVMODEL_OP_READ, 0, 4096, 4096, 1};
  devmodel_result res;
  devmodel_submit_result(m, &r, 1000, &res, &err);
  EXPECT_EQ(res.status, static_cast<uint32_t>(DEVMODEL_STATUS_MEDIA_ERROR));
  EXPECT_EQ(res.final, 1);
  EXPECT_EQ(res.deadline_ns, 1000 + kLatencyNs + kMs);
  r.offset_bytes = 0;
  r.tag = 2;
  devmodel_submit_result(m, &r, 2000, &res, &err);
  EXPECT_EQ(res.status, static_cast<uint32_t>(DEVMODEL_STATUS_OK));
  // The old call: the same deadline, no status.
  r.offset_bytes = 4096;
  r.tag = 3;
  devmodel_completion c;
  devmodel_submit(m, &r, 3000, &c, &err);
  EXPECT_EQ(c.deadline_ns, 3000 + kLatencyNs + kMs);
  // An unknown tag polled: {now, final, OK}.
  devmodel_poll_result(m, 99, 5000, &res, &err);
  EXPECT_EQ(res.deadline_ns, 5000u);
  EXPECT_EQ(res.status, static_cast<uint32_t>(DEVMODEL_STATUS_OK));
  EXPECT_EQ(err, nullptr);
  char* json = devmodel_counters_json(m, &err);
  const auto j = nlohmann::json::parse(json);
  devmodel_free(json);
  EXPECT_EQ(j["media_errors"]["read"], 2);
  EXPECT_EQ(j["media_errors"]["write"], 0);
  EXPECT_EQ(j["faults"][0]["requests"], 2);
  devmodel_close(m);
}

TEST(FaultsTest, HddMediaErrorIsReportedOnThePolledFinalDeadline) {
  Fault f;
  f.kind = FaultKind::kMediaError;
  f.duration_ns = kForever;
  f.lba_start = 0;
  f.lba_count = 1;
  std::unique_ptr<FaultyDevice> d;
  EXPECT_EQ(HddReadWith(f, &d).status, Status::kMediaError);
}

TEST(FaultsTest, TimeoutLosesReadsSubmittedInTheWindowThatTouchTheRange) {
  auto d = Load(FixedProfile(
      "[[fault]]\nkind = \"timeout\"\nat_ms = 1\nduration_ms = 2\nlba_start = 8\n"
      "lba_count = 8\n"));
  FaultyDevice* f = FaultyDevice::Of(d.get());
  f->SetOrigin(0);
  const TimeNs s = 1 * kMs, e = 3 * kMs;
  Request in = Read(1);
  in.offset_bytes = 15 * 512;  // its first block is the range's last
  // Before, at the start, at the end of the window.
  EXPECT_EQ(d->Submit(in, s - 1).status, Status::kOk);
  in.tag = 2;
  const Completion lost = d->Submit(in, s);
  EXPECT_EQ(lost.status, Status::kLost);
  EXPECT_TRUE(lost.final);
  EXPECT_EQ(lost.deadline_ns, s + kLatencyNs);  // when the device would have
  in.tag = 3;
  EXPECT_EQ(d->Submit(in, e).status, Status::kOk);
  // Beside the range, and a write into it: completed.
  Request beside = Read(4);
  beside.offset_bytes = 16 * 512;
  EXPECT_EQ(d->Submit(beside, s).status, Status::kOk);
  Request write = Read(5);
  write.op = Op::kWrite;
  write.offset_bytes = 8 * 512;
  EXPECT_EQ(d->Submit(write, s).status, Status::kOk);
  auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["kind"], "timeout");
  EXPECT_EQ(j["faults"][0]["requests"], 1);
  EXPECT_EQ(j["faults"][0]["lba_start"], 8);
  EXPECT_EQ(j["faults"][0]["writes"], false);
  EXPECT_FALSE(j["faults"][0].contains("retry_ns"));
  EXPECT_EQ(j["lost_held"], 1);
  EXPECT_EQ(j["cancelled"], 0);
  // The host takes it back once; a second cancel and a completed tag do
  // not count.
  EXPECT_TRUE(f->Cancel(2));
  EXPECT_FALSE(f->Cancel(2));
  EXPECT_FALSE(f->Cancel(1));
  j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["lost_held"], 0);
  EXPECT_EQ(j["cancelled"], 1);
}

TEST(FaultsTest, TimeoutWithoutARangeLosesEveryBlockAndWritesWhenAsked) {
  auto d = Load(FixedProfile(
      "[[fault]]\nkind = \"timeout\"\nat_ms = 0\nduration_ms = 1\nwrites = true\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  Request r = Read(1);
  r.offset_bytes = (1ull << 30) - 4096;  // the last block
  EXPECT_EQ(d->Submit(r, 0).status, Status::kLost);
  r.op = Op::kWrite;
  r.tag = 2;
  EXPECT_EQ(d->Submit(r, 0).status, Status::kLost);
  Request flush;
  flush.op = Op::kFlush;
  flush.tag = 3;
  EXPECT_EQ(d->Submit(flush, 0).status, Status::kOk);  // not a read or write
}

TEST(FaultsTest, HddLostRequestIsPolledToItsEndThenLost) {
  Fault f;
  f.kind = FaultKind::kTimeout;
  f.duration_ns = kMs;
  std::unique_ptr<FaultyDevice> d;
  // The inner model still serves it (its state as if it did the work); the
  // final answer is that the device never completes it.
  const Completion c = HddReadWith(f, &d);
  EXPECT_EQ(c.status, Status::kLost);
  EXPECT_GT(c.deadline_ns, 0u);
  EXPECT_TRUE(d->Cancel(7));
}

TEST(FaultsTest, CApiLostRequestHasNoServiceTimeAndIsCancelledOnce) {
  char* err = nullptr;
  devmodel_t* m =
      OpenText(FixedProfile("[[fault]]\nkind = \"timeout\"\nat_ms = 0\nduration_ms = 1\n"), &err);
  ASSERT_NE(m, nullptr) << err;
  devmodel_set_origin(m, 0);
  devmodel_request r = {DEVMODEL_OP_READ, 0, 0, 4096, 1};
  devmodel_result res;
  devmodel_submit_result(m, &r, 1000, &res, &err);
  EXPECT_EQ(res.status, static_cast<uint32_t>(DEVMODEL_STATUS_LOST));
  EXPECT_EQ(res.final, 1);
  EXPECT_EQ(res.deadline_ns, 1000 + kLatencyNs);
  // The old call drops the status: the request completes at the model's time.
  r.tag = 2;
  devmodel_completion c;
  devmodel_submit(m, &r, 2000, &c, &err);
  EXPECT_EQ(c.deadline_ns, 2000 + kLatencyNs);
  // After the window: completed.
  r.tag = 3;
  devmodel_submit_result(m, &r, kMs, &res, &err);
  EXPECT_EQ(res.status, static_cast<uint32_t>(DEVMODEL_STATUS_OK));
  devmodel_cancel(m, 1, 3 * kMs);
  devmodel_cancel(m, 1, 3 * kMs);
  devmodel_cancel(m, 3, 3 * kMs);  // completed: ignored
  EXPECT_EQ(err, nullptr);
  char* json = devmodel_counters_json(m, &err);
  const auto j = nlohmann::json::parse(json);
  devmodel_free(json);
  EXPECT_EQ(j["lost"]["read"], 2);
  EXPECT_EQ(j["lost"]["write"], 0);
  EXPECT_EQ(j["cancelled"], 1);
  EXPECT_EQ(j["lost_held"], 1);  // tag 2: its caller never cancelled it
  EXPECT_EQ(j["service_ns"]["read"]["count"], 1);  // tag 3 only
  EXPECT_EQ(j["faults"][0]["requests"], 2);
  devmodel_close(m);
}

TEST(FaultsTest, ResetLosesWhatTheDeviceHoldsAndGetsUntilTheHostResetsIt) {
  auto d = Load(FixedProfile("[[fault]]\nkind = \"reset\"\nat_ms = 1\n"));
  FaultyDevice* f = FaultyDevice::Of(d.get());
  EXPECT_FALSE(f->Failed(5 * kMs));  // no origin yet: no fault
  EXPECT_FALSE(f->HostReset(0));      // the machine's own: not counted below
  f->SetOrigin(0);
  const TimeNs s = 1 * kMs;
  // Completed just before the failure; held at it (its deadline is the
  // failure's time): lost.
  EXPECT_EQ(d->Submit(Read(1), s - kLatencyNs - 1).status, Status::kOk);
  const Completion held = d->Submit(Read(2), s - kLatencyNs);
  EXPECT_EQ(held.status, Status::kLost);
  EXPECT_TRUE(held.final);
  EXPECT_EQ(held.deadline_ns, s);  // when the device would have completed it
  EXPECT_FALSE(f->Failed(s - 1));
  EXPECT_TRUE(f->Failed(s));
  // While failed: every op is lost, a write and a flush too.
  Request write = Read(3);
  write.op = Op::kWrite;
  EXPECT_EQ(d->Submit(write, 2 * kMs).status, Status::kLost);
  Request flush;
  flush.op = Op::kFlush;
  flush.tag = 4;
  EXPECT_EQ(d->Submit(flush, 2 * kMs).status, Status::kLost);
  auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["kind"], "reset");
  EXPECT_EQ(j["faults"][0]["requests"], 3);
  EXPECT_EQ(j["faults"][0]["start_ns"], s);
  EXPECT_TRUE(j["faults"][0]["end_ns"].is_null());
  EXPECT_TRUE(j["faults"][0]["duration_ns"].is_null());
  EXPECT_FALSE(j["faults"][0].contains("lba_start"));
  EXPECT_EQ(j["lost_held"], 3);
  EXPECT_EQ(j["host_resets"], 0);
  // The host resets the device and takes back what it held: the device
  // works again.
  const TimeNs r = 7 * kMs;
  EXPECT_TRUE(f->HostReset(r));
  EXPECT_FALSE(f->Failed(r));
  for (std::uint64_t tag : {2, 3, 4}) EXPECT_TRUE(f->Cancel(tag));
  const Completion after = d->Submit(Read(5), r);
  EXPECT_EQ(after.status, Status::kOk);
  EXPECT_EQ(after.deadline_ns, r + kLatencyNs);
  EXPECT_FALSE(f->HostReset(r + kMs));  // nothing failed: counted, ends nothing
  j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["requests"], 3);
  EXPECT_EQ(j["faults"][0]["end_ns"], r);
  EXPECT_EQ(j["faults"][0]["duration_ns"], r - s);
  EXPECT_EQ(j["host_resets"], 2);
  EXPECT_EQ(j["lost_held"], 0);
  EXPECT_EQ(j["cancelled"], 3);
}

TEST(FaultsTest, EachResetFaultFailsTheDeviceAgainAfterTheHostsReset) {
  auto d = Load(FixedProfile("[[fault]]\nkind = \"reset\"\nat_ms = 3\n"
                             "[[fault]]\nkind = \"reset\"\nat_ms = 1\n"
                             "[[fault]]\nkind = \"reset\"\nat_ms = 5\n"));
  FaultyDevice* f = FaultyDevice::Of(d.get());
  f->SetOrigin(10 * kMs);
  EXPECT_TRUE(f->Failed(11 * kMs));
  EXPECT_TRUE(f->HostReset(12 * kMs));  // ends the one at 1 ms only
  EXPECT_FALSE(f->Failed(12 * kMs));
  // A request held across the next failure is lost to it.
  EXPECT_EQ(d->Submit(Read(1), 13 * kMs - kLatencyNs).status, Status::kLost);
  EXPECT_TRUE(f->Failed(13 * kMs));
  // One reset after both remaining faults started ends both.
  EXPECT_TRUE(f->HostReset(16 * kMs));
  EXPECT_FALSE(f->Failed(16 * kMs));
  EXPECT_EQ(d->Submit(Read(2), 16 * kMs).status, Status::kOk);
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["end_ns"], 16 * kMs);  // at 3 ms
  EXPECT_EQ(j["faults"][0]["requests"], 1);
  EXPECT_EQ(j["faults"][1]["end_ns"], 12 * kMs);  // at 1 ms
  EXPECT_EQ(j["faults"][1]["requests"], 0);
  EXPECT_EQ(j["faults"][2]["end_ns"], 16 * kMs);  // at 5 ms
  EXPECT_EQ(j["faults"][2]["duration_ns"], 1 * kMs);
}

TEST(FaultsTest, HddPolledRequestIsLostWhenItsFinalDeadlineIsPastTheReset) {
  Fault f;
  f.kind = FaultKind::kReset;
  f.duration_ns = kForever;
  std::unique_ptr<FaultyDevice> d;
  // The failure is at the origin, 0: the read's polls still run (its state
  // as if it did the work), its final answer is that it is lost.
  const Completion c = HddReadWith(f, &d);
  EXPECT_EQ(c.status, Status::kLost);
  EXPECT_GT(c.deadline_ns, 0u);
  EXPECT_TRUE(d->Failed(c.deadline_ns));
  EXPECT_TRUE(d->Cancel(7));
}

TEST(FaultsTest, CApiReportsTheFailureUntilTheHostResetsTheDevice) {
  char* err = nullptr;
  devmodel_t* m = OpenText(FixedProfile("[[fault]]\nkind = \"reset\"\nat_ms = 1\n"), &err);
  ASSERT_NE(m, nullptr) << err;
  EXPECT_EQ(devmodel_failed(m, 2 * kMs), 0);  // no origin yet
  devmodel_set_origin(m, 0);
  EXPECT_EQ(devmodel_failed(m, kMs - 1), 0);
  EXPECT_EQ(devmodel_failed(m, kMs), 1);
  devmodel_request r = {DEVMODEL_OP_READ, 0, 0, 4096, 1};
  devmodel_result res;
  devmodel_submit_result(m, &r, kMs - 1, &res, &err);  // held at the failure
  EXPECT_EQ(res.status, static_cast<uint32_t>(DEVMODEL_STATUS_LOST));
  EXPECT_EQ(res.deadline_ns, kMs - 1 + kLatencyNs);
  r.tag = 2;
  devmodel_submit_result(m, &r, 2 * kMs, &res, &err);
  EXPECT_EQ(res.status, static_cast<uint32_t>(DEVMODEL_STATUS_LOST));
  devmodel_cancel(m, 1, 3 * kMs);
  devmodel_cancel(m, 2, 3 * kMs);
  devmodel_host_reset(m, 3 * kMs);
  EXPECT_EQ(devmodel_failed(m, 3 * kMs), 0);
  r.tag = 3;
  devmodel_submit_result(m, &r, 3 * kMs, &res, &err);
  EXPECT_EQ(res.status, static_cast<uint32_t>(DEVMODEL_STATUS_OK));
  EXPECT_EQ(err, nullptr);
  char* json = devmodel_counters_json(m, &err);
  const auto j = nlohmann::json::parse(json);
  devmodel_free(json);
  EXPECT_EQ(j["lost"]["read"], 2);
  EXPECT_EQ(j["cancelled"], 2);
  EXPECT_EQ(j["lost_held"], 0);
  EXPECT_EQ(j["host_resets"], 1);
  EXPECT_EQ(j["faults"][0]["requests"], 2);
  EXPECT_EQ(j["faults"][0]["end_ns"], 3 * kMs);
  EXPECT_EQ(j["service_ns"]["read"]["count"], 1);  // tag 3 only
  devmodel_close(m);
}

TEST(FaultsTest, CApiCountersCarryTheOriginWithoutFaults) {
  char* err = nullptr;
  devmodel_t* m =
      devmodel_open((std::string(DEVMODEL_PROFILE_DIR) + "/fixed-10us.toml").c_str(), 1, &err);
  ASSERT_NE(m, nullptr) << err;
  char* json = devmodel_counters_json(m, &err);
  EXPECT_TRUE(nlohmann::json::parse(json)["fault_origin_ns"].is_null());
  devmodel_free(json);
  devmodel_set_origin(m, 42);
  json = devmodel_counters_json(m, &err);
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["fault_origin_ns"], 42);
  EXPECT_TRUE(j["faults"].empty());
  devmodel_free(json);
  devmodel_close(m);
}

// ---- Triggers: after N requests, and a seeded probability per request.

std::unique_ptr<Device> LoadSeeded(const std::string& text, std::uint64_t seed) {
  std::string error;
  auto d = LoadProfileFromString(text, "test.toml", seed, &error);
  EXPECT_NE(d, nullptr) << error;
  return d;
}

Request ReadAt(std::uint64_t tag, std::uint64_t block) {
  Request r = Read(tag);
  r.offset_bytes = block * 4096;
  return r;
}

TEST(FaultsTest, AfterRequestsStartsTheWindowAtTheNextRequest) {
  // Reads of block 0 fail for 1 ms from the 4th request since the origin.
  auto d = Load(FixedProfile("[[fault]]\nkind = \"media_error\"\nafter_requests = 3\n"
                             "duration_ms = 1\nlba_start = 0\nlba_count = 8\n"));
  FaultyDevice::Of(d.get())->SetOrigin(10 * kMs);
  // Before the origin: neither failed nor counted.
  EXPECT_EQ(d->Submit(Read(1), 5 * kMs).status, Status::kOk);
  // Requests 1-3 (a flush and a read elsewhere count too): not failed.
  Request flush;
  flush.op = Op::kFlush;
  flush.tag = 2;
  EXPECT_EQ(d->Submit(flush, 10 * kMs).status, Status::kOk);
  EXPECT_EQ(d->Submit(ReadAt(3, 100), 11 * kMs).status, Status::kOk);
  EXPECT_EQ(d->Submit(Read(4), 12 * kMs).status, Status::kOk);
  auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_TRUE(j["faults"][0]["start_ns"].is_null());  // not started yet
  EXPECT_TRUE(j["faults"][0]["trigger_request"].is_null());
  // Request 4 at 20 ms starts [20, 21) ms; it reads another block, so the
  // window's first failed read is request 5.
  const TimeNs s = 20 * kMs;
  EXPECT_EQ(d->Submit(ReadAt(5, 100), s).status, Status::kOk);
  EXPECT_EQ(d->Submit(Read(6), s + 1).status, Status::kMediaError);
  EXPECT_EQ(d->Submit(Read(7), s + kMs - 1).status, Status::kMediaError);
  EXPECT_EQ(d->Submit(Read(8), s + kMs).status, Status::kOk);
  j = nlohmann::json::parse(d->CountersJson());
  const auto& f = j["faults"][0];
  EXPECT_EQ(f["trigger"], "after_requests");
  EXPECT_EQ(f["after_requests"], 3);
  EXPECT_TRUE(f["at_ns"].is_null());
  EXPECT_EQ(f["start_ns"], s);
  EXPECT_EQ(f["end_ns"], s + kMs);
  EXPECT_EQ(f["trigger_request"], nlohmann::json({{"request", 4}, {"ns", s}}));
  EXPECT_EQ(f["first_request"], nlohmann::json({{"request", 5}, {"ns", s + 1}}));
  EXPECT_EQ(f["requests"], 2);
  EXPECT_EQ(j["requests_since_origin"], 7);
}

TEST(FaultsTest, AfterRequestsZeroStartsAtTheFirstRequest) {
  auto d = Load(FixedProfile("[[fault]]\nkind = \"stall\"\nafter_requests = 0\n"
                             "duration_ms = 50\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  const TimeNs t = 3 * kMs;
  // The first request starts the stall at its own submission: held to its end.
  EXPECT_EQ(d->Submit(Read(1), t).deadline_ns, t + 50 * kMs);
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["trigger_request"]["request"], 1);
  EXPECT_EQ(j["faults"][0]["start_ns"], t);
  EXPECT_EQ(j["faults"][0]["requests"], 1);
}

TEST(FaultsTest, AfterRequestsStallKeepsTheDeadlinesAlreadyGiven) {
  auto d = Load(FixedProfile("[[fault]]\nkind = \"stall\"\nafter_requests = 1\n"
                             "duration_ms = 1\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  // Request 1's deadline (10 us) was given before request 2 (at 5 us)
  // started the stall [5 us, 1.005 ms): it stays.
  EXPECT_EQ(d->Submit(Read(1), 0).deadline_ns, kLatencyNs);
  EXPECT_EQ(d->Submit(Read(2), 5000).deadline_ns, 5000 + kMs);
}

TEST(FaultsTest, AfterRequestsStallsAreOrderedByTheirActualStart) {
  // A: after 1 request, [t2, t2 + 1 ms); B: at 0.5 ms for 1 ms. With t2 =
  // 0.2 ms a deadline in A (0.21 ms) moves to 1.2 ms, inside B, then to
  // B's end 1.5 ms: both count it, as for two timed stalls.
  auto d = Load(FixedProfile("[[fault]]\nkind = \"stall\"\nafter_requests = 1\nduration_ms = 1\n"
                             "[[fault]]\nkind = \"stall\"\nat_ms = 0.5\nduration_ms = 1\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  EXPECT_EQ(d->Submit(Read(1), 0).deadline_ns, kLatencyNs);
  EXPECT_EQ(d->Submit(Read(2), 200000).deadline_ns, 1500000u);
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["requests"], 1);
  EXPECT_EQ(j["faults"][1]["requests"], 1);
}

TEST(FaultsTest, AfterRequestsSlowAndResetStartAtTheirRequest) {
  auto d = Load(FixedProfile("[[fault]]\nkind = \"slow\"\nafter_requests = 2\nduration_ms = 1\n"
                             "factor = 3\n[[fault]]\nkind = \"reset\"\nafter_requests = 5\n"));
  FaultyDevice* f = FaultyDevice::Of(d.get());
  f->SetOrigin(0);
  EXPECT_EQ(d->Submit(Read(1), 0).deadline_ns, kLatencyNs);
  EXPECT_EQ(d->Submit(Read(2), kMs).deadline_ns, kMs + kLatencyNs);
  EXPECT_EQ(d->Submit(Read(3), 2 * kMs).deadline_ns, 2 * kMs + 3 * kLatencyNs);  // starts it
  EXPECT_EQ(d->Submit(Read(4), 3 * kMs).deadline_ns, 3 * kMs + kLatencyNs);      // past its end
  EXPECT_EQ(d->Submit(Read(5), 4 * kMs).status, Status::kOk);
  EXPECT_FALSE(f->Failed(10 * kMs));  // the reset waits for request 6
  EXPECT_EQ(d->Submit(Read(6), 11 * kMs).status, Status::kLost);
  EXPECT_FALSE(f->Failed(11 * kMs - 1));
  EXPECT_TRUE(f->Failed(11 * kMs));
  EXPECT_TRUE(f->HostReset(12 * kMs));
  EXPECT_TRUE(f->Cancel(6));
  EXPECT_EQ(d->Submit(Read(7), 12 * kMs).status, Status::kOk);
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["start_ns"], 2 * kMs);
  EXPECT_EQ(j["faults"][0]["end_ns"], 3 * kMs);
  EXPECT_EQ(j["faults"][0]["requests"], 1);
  EXPECT_EQ(j["faults"][1]["start_ns"], 11 * kMs);
  EXPECT_EQ(j["faults"][1]["end_ns"], 12 * kMs);
  EXPECT_EQ(j["faults"][1]["trigger_request"]["request"], 6);
  EXPECT_EQ(j["faults"][1]["requests"], 1);
}

TEST(FaultsTest, ATimeoutAndAMediaErrorOnOneRequestLoseItAndCountTheTimeoutOnly) {
  // The media error comes first in the schedule; the timeout still wins,
  // and the media error does not count the request it did not fail.
  auto d = Load(FixedProfile(
      "[[fault]]\nkind = \"media_error\"\nlba_start = 0\nlba_count = 8\n"
      "[[fault]]\nkind = \"timeout\"\nat_ms = 0\nduration_ms = 1\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  EXPECT_EQ(d->Submit(Read(1), 0).status, Status::kLost);
  EXPECT_EQ(d->Submit(Read(2), kMs).status, Status::kMediaError);
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["requests"], 1);
  EXPECT_EQ(j["faults"][0]["first_request"]["request"], 2);
  EXPECT_EQ(j["faults"][1]["requests"], 1);
  EXPECT_EQ(j["faults"][1]["first_request"]["request"], 1);
}

constexpr std::uint64_t kPickReads = 100000;
constexpr double kPickP = 0.01;

// kPickReads 4 KiB reads (of blocks 0, 1, ...) one every `gap_ns` from the
// origin 0 on a device with a media_error of probability kPickP on every
// block, under `seed`: the request numbers that failed.
std::vector<std::uint64_t> PickedReads(std::uint64_t seed, TimeNs gap_ns,
                                       nlohmann::json* counters = nullptr) {
  auto d = LoadSeeded(FixedProfile("[[fault]]\nkind = \"media_error\"\nprobability = 0.01\n"),
                      seed);
  FaultyDevice::Of(d.get())->SetOrigin(0);
  std::vector<std::uint64_t> failed;
  for (std::uint64_t n = 1; n <= kPickReads; ++n) {
    const Completion c = d->Submit(ReadAt(n, (n - 1) % 1000), (n - 1) * gap_ns);
    if (c.status == Status::kMediaError) failed.push_back(n);
  }
  if (counters != nullptr) *counters = nlohmann::json::parse(d->CountersJson());
  return failed;
}

TEST(FaultsTest, ProbabilityPicksDependOnTheSeedAndTheRequestNumbersOnly) {
  nlohmann::json j;
  const auto a = PickedReads(1, 10000, &j);
  // The same seed and requests at other times: the same picks.
  EXPECT_EQ(PickedReads(1, 37000), a);
  // Each is what FaultPick says, for every request: the failed ones are
  // exactly those below the probability.
  std::vector<std::uint64_t> expected;
  for (std::uint64_t n = 1; n <= kPickReads; ++n) {
    if (FaultPick(1, 0, n) < kPickP) expected.push_back(n);
  }
  EXPECT_EQ(a, expected);
  // The counters: every pick counted, the first kMaxListedPicks listed with
  // their time; the first request is the first pick.
  const auto& f = j["faults"][0];
  EXPECT_EQ(f["trigger"], "probability");
  EXPECT_EQ(f["probability"], kPickP);
  EXPECT_EQ(f["requests"], a.size());
  EXPECT_EQ(f["start_ns"], 0);
  EXPECT_TRUE(f["end_ns"].is_null());
  EXPECT_EQ(f["lba_count"], 0);  // every block
  ASSERT_EQ(f["picks"].size(), std::min(a.size(), kMaxListedPicks));
  for (std::size_t k = 0; k < f["picks"].size(); ++k) {
    EXPECT_EQ(f["picks"][k]["request"], a[k]);
    EXPECT_EQ(f["picks"][k]["ns"], (a[k] - 1) * 10000);
  }
  EXPECT_EQ(f["first_request"]["request"], a.front());
}

TEST(FaultsTest, ProbabilityRateIsWithinTheBinomialBoundAndSeedsPickApart) {
  // X ~ Binomial(n = 1e5, p = 0.01), mean mu = 1000. Chernoff: P(|X - mu|
  // >= d mu) <= 2 exp(-d^2 mu / 3); d = 0.2 gives 3.2e-6 per seed. Two
  // seeds' picks overlap ~ Binomial(n, p^2), mean 10; P(>= 50) <=
  // exp(-4^2 x 10 / (2 + 4)) = 2.6e-12.
  const double mu = kPickReads * kPickP;
  std::vector<std::vector<std::uint64_t>> picks;
  for (std::uint64_t seed : {1, 2, 3, 0x5eed}) {
    picks.push_back(PickedReads(seed, 10000));
    const double x = static_cast<double>(picks.back().size());
    EXPECT_LT(std::abs(x - mu), 0.2 * mu) << "seed " << seed;
  }
  for (std::size_t a = 0; a < picks.size(); ++a) {
    for (std::size_t b = a + 1; b < picks.size(); ++b) {
      EXPECT_NE(picks[a], picks[b]);
      std::vector<std::uint64_t> both;
      std::set_intersection(picks[a].begin(), picks[a].end(), picks[b].begin(), picks[b].end(),
                            std::back_inserter(both));
      EXPECT_LT(both.size(), 50u) << a << " " << b;
    }
  }
}

TEST(FaultsTest, ProbabilityPicksOnlyRequestsTheFaultCouldFail) {
  // A timeout of probability 1 on blocks [8, 16): every read there is lost,
  // a read beside it, a write (no `writes`) and a flush are not, yet they
  // are numbered.
  auto d = Load(FixedProfile("[[fault]]\nkind = \"timeout\"\nprobability = 1\nlba_start = 8\n"
                             "lba_count = 8\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  Request w = ReadAt(1, 1);
  w.op = Op::kWrite;
  EXPECT_EQ(d->Submit(w, 0).status, Status::kOk);
  EXPECT_EQ(d->Submit(ReadAt(2, 3), 0).status, Status::kOk);
  EXPECT_EQ(d->Submit(ReadAt(3, 1), 0).status, Status::kLost);
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["picks"],
            nlohmann::json::array({{{"request", 3}, {"ns", 0}}}));
}

// A cloud volume with a fixed 1000 IOPS cap over a zero-latency backing,
// no network time: I/O passes the throttle 1 ms apart.
std::string CloudProfile(const std::string& faults) {
  return "[device]\nmodel = \"cloud\"\n[cloud]\nbacking = \"zero\"\niops_cap = 1000\n"
         "throughput_mib_s = 100000\nlatency_floor_us = 0\nlatency_jitter_mean_us = 0\n"
         "[zero]\ncapacity_bytes = 1073741824\nlatency_us = 0\n" +
         faults;
}

TEST(FaultsTest, SlowLowersACloudVolumesRateLimitInsteadOfServiceTimes) {
  auto plain = Load(CloudProfile(""));
  auto d = Load(CloudProfile("[[fault]]\nkind = \"slow\"\nat_ms = 100\nduration_ms = 100\n"
                             "factor = 4\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  const TimeNs s = 100 * kMs;
  // Five reads at once before the window: 1 ms apart, as without the fault.
  for (std::uint64_t k = 0; k < 5; ++k) {
    EXPECT_EQ(d->Submit(Read(k), 0).deadline_ns, k * kMs);
    EXPECT_EQ(plain->Submit(Read(k), 0).deadline_ns, k * kMs);
  }
  // Five at the window's start: each takes 4 ms of the limit (250 IOPS).
  for (std::uint64_t k = 0; k < 5; ++k) {
    EXPECT_EQ(d->Submit(Read(10 + k), s).deadline_ns, s + 4 * k * kMs);
  }
  // Submitted after the window, behind the last one's 4 ms: 1 ms apart again.
  const TimeNs e = s + 100 * kMs;
  for (std::uint64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(d->Submit(Read(20 + k), e).deadline_ns, e + k * kMs);
  }
  const auto j = nlohmann::json::parse(d->CountersJson());
  EXPECT_EQ(j["faults"][0]["requests"], 5);
  EXPECT_EQ(j["faults"][0]["lowers_rate_limit"], true);
  EXPECT_EQ(j["model"], "cloud");
  // A lone request in the window below the limit keeps its service time: the
  // limit, not the backing device or the network, is what is lowered.
  auto lone = Load(CloudProfile("[[fault]]\nkind = \"slow\"\nat_ms = 0\nduration_ms = 100\n"
                                "factor = 4\n"));
  FaultyDevice::Of(lone.get())->SetOrigin(0);
  EXPECT_EQ(lone->Submit(Read(1), kMs).deadline_ns, kMs);
  EXPECT_EQ(lone->Submit(Read(2), 10 * kMs).deadline_ns, 10 * kMs);
}

TEST(FaultsTest, SlowAfterRequestsLowersACloudVolumesRateFromItsRequest) {
  auto d = Load(CloudProfile("[[fault]]\nkind = \"slow\"\nafter_requests = 2\n"
                             "duration_ms = 100\nfactor = 2.5\n"));
  FaultyDevice::Of(d.get())->SetOrigin(0);
  // Requests 1 and 2 at the limit's 1 ms; 3 starts the window, so 3 and 4
  // take 2.5 ms each.
  EXPECT_EQ(d->Submit(Read(1), 0).deadline_ns, 0u);
  EXPECT_EQ(d->Submit(Read(2), 0).deadline_ns, kMs);
  EXPECT_EQ(d->Submit(Read(3), 0).deadline_ns, 2 * kMs);
  EXPECT_EQ(d->Submit(Read(4), 0).deadline_ns, 2 * kMs + 2500000);
  EXPECT_EQ(d->Submit(Read(5), 0).deadline_ns, 2 * kMs + 5000000);
}

// The submit path never allocates: a probability fault's list of picks is
// reserved whole at construction, so the schedule's heap bytes are the same
// before any request and after more picks than the list holds (every
// request picked: probability 1).
TEST(FaultsTest, ListingPicksAllocatesNothingOnTheSubmitPath) {
  Fault f;
  f.kind = FaultKind::kMediaError;
  f.lba_count = 0;
  f.trigger = FaultTrigger::kProbability;
  f.probability = 1.0;
  f.duration_ns = kForever;
  FaultSchedule s({f}, 7);
  s.SetOrigin(0);
  const std::uint64_t before = s.MemoryBytes();
  EXPECT_GE(before, kMaxListedPicks * 16);
  for (std::uint64_t n = 1; n <= kMaxListedPicks + 10; ++n) {
    const std::uint64_t number = s.Arrive(n * 1000);
    EXPECT_EQ(s.Classify(ReadAt(n, n), n * 1000, number, 4096).media_error, 0);
  }
  EXPECT_EQ(s.MemoryBytes(), before);
}

}  // namespace
}  // namespace devmodel
