#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "devmodel/devmodel.h"

namespace {

std::string Profile(const char* name) { return std::string(DEVMODEL_PROFILE_DIR) + "/" + name; }

TEST(CApiTest, OpenSubmitCountersClose) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(Profile("samsung-970evoplus-1t.toml").c_str(), 7, &err);
  ASSERT_NE(m, nullptr) << err;
  EXPECT_EQ(devmodel_capacity_bytes(m), 1000204886016ull);
  EXPECT_EQ(devmodel_logical_block_bytes(m), 512u);
  EXPECT_EQ(devmodel_rotation_rate(m), 1u);
  EXPECT_EQ(devmodel_deadlines_final(m), 0);  // reads wait for the host link in ready order
  devmodel_request w = {DEVMODEL_OP_WRITE, 1, 0, 4096, 1};
  devmodel_completion c;
  devmodel_submit(m, &w, 1000, &c, &err);
  EXPECT_EQ(err, nullptr);
  EXPECT_EQ(c.final, 1);
  EXPECT_GT(c.deadline_ns, 1000u);
  char* json = devmodel_counters_json(m, &err);
  ASSERT_NE(json, nullptr);
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["host_bytes_written"], 4096);
  devmodel_free(json);
  devmodel_close(m);
}

TEST(CApiTest, ErrorsComeBackThroughErrptr) {
  char* err = nullptr;
  EXPECT_EQ(devmodel_open("/nonexistent.toml", 1, &err), nullptr);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(err, "/nonexistent.toml: cannot open file");
  devmodel_t* m =
      devmodel_open(Profile("zero-latency.toml").c_str(), 1, &err);  // err replaced on failure only
  ASSERT_NE(m, nullptr);
  devmodel_free(err);
  err = nullptr;
  devmodel_completion c;
  devmodel_request beyond = {DEVMODEL_OP_READ, 0, devmodel_capacity_bytes(m), 512, 2};
  devmodel_submit(m, &beyond, 50, &c, &err);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(err, "devmodel_submit: request extends beyond the device capacity");
  EXPECT_EQ(c.deadline_ns, 50u);
  EXPECT_EQ(c.final, 1);
  devmodel_request odd = {DEVMODEL_OP_WRITE, 0, 100, 512, 3};
  devmodel_submit(m, &odd, 60, &c, &err);  // frees the previous message
  EXPECT_STREQ(
      err,
      "devmodel_submit: offset_bytes or length_bytes not a multiple of the logical block size");
  devmodel_request bad_op = {9, 0, 0, 512, 4};
  devmodel_submit(m, &bad_op, 70, &c, &err);
  EXPECT_STREQ(err, "devmodel_submit: unknown op 9");
  devmodel_free(err);
  devmodel_close(m);
  devmodel_close(nullptr);
}

TEST(CApiTest, TimeNeverRunsBackwards) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(Profile("zero-latency.toml").c_str(), 1, &err);
  ASSERT_NE(m, nullptr);
  devmodel_request r = {DEVMODEL_OP_READ, 0, 0, 4096, 1};
  devmodel_completion c;
  devmodel_submit(m, &r, 5000, &c, &err);
  devmodel_submit(m, &r, 4000, &c, &err);  // earlier than before: treated as 5000
  EXPECT_EQ(c.deadline_ns, 5000u);
  devmodel_poll(m, 12345, 6000, &c, &err);  // unknown tag
  EXPECT_EQ(c.deadline_ns, 6000u);
  EXPECT_EQ(c.final, 1);
  EXPECT_EQ(err, nullptr);
  devmodel_close(m);
}

TEST(CApiTest, HddReportsRotationAndPollsToAFinalDeadline) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(Profile("hdd-7200-desktop-1t.toml").c_str(), 1, &err);
  ASSERT_NE(m, nullptr) << err;
  EXPECT_EQ(devmodel_rotation_rate(m), 7200u);
  EXPECT_EQ(devmodel_deadlines_final(m), 0);  // sptf
  devmodel_request r = {DEVMODEL_OP_READ, 0, 512ull * 1000000, 4096, 0xabc};
  devmodel_completion c;
  devmodel_submit(m, &r, 0, &c, &err);
  int polls = 0;
  while (!c.final && polls < 100) {
    devmodel_poll(m, r.tag, c.deadline_ns, &c, &err);
    ++polls;
  }
  EXPECT_EQ(c.final, 1);
  EXPECT_GT(c.deadline_ns, 1000000u);  // a seek and some rotation
  EXPECT_EQ(err, nullptr);
  devmodel_close(m);
}

TEST(CApiTest, ServiceTimeCountsFinalDeadlinesByOp) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(Profile("hdd-7200-desktop-1t.toml").c_str(), 1, &err);
  ASSERT_NE(m, nullptr) << err;
  uint64_t read_ns = 0;
  for (uint64_t i = 0; i < 3; ++i) {
    const uint64_t now = 100000000ull * i;
    devmodel_request r = {DEVMODEL_OP_READ, 0, 512ull * 7919 * 1000 * (i + 1), 4096, 10 + i};
    devmodel_completion c;
    devmodel_submit(m, &r, now, &c, &err);
    while (!c.final) devmodel_poll(m, r.tag, c.deadline_ns, &c, &err);
    read_ns += c.deadline_ns - now;
  }
  devmodel_request bad = {DEVMODEL_OP_READ, 0, devmodel_capacity_bytes(m), 4096, 99};
  devmodel_completion c;
  devmodel_submit(m, &bad, 400000000ull, &c, &err);  // rejected: not counted
  ASSERT_NE(err, nullptr);
  devmodel_free(err);
  err = nullptr;
  char* json = devmodel_counters_json(m, &err);
  ASSERT_NE(json, nullptr);
  const auto service = nlohmann::json::parse(json)["service_ns"];
  EXPECT_EQ(service["read"]["count"], 3);
  EXPECT_EQ(service["read"]["total"], read_ns);
  EXPECT_GT(service["read"]["max"], 0);
  EXPECT_EQ(service["write"]["count"], 0);
  EXPECT_EQ(service["trim"]["total"], 0);
  devmodel_free(json);
  devmodel_close(m);
}

TEST(CApiTest, RefusesTransfersNoDeviceCouldCarry) {
  char* err = nullptr;
  devmodel_t* m = devmodel_open(Profile("zero-latency.toml").c_str(), 1, &err);
  ASSERT_NE(m, nullptr);
  devmodel_completion c;
  devmodel_request huge = {DEVMODEL_OP_WRITE, 0, 0, (1ull << 30) + 512, 1};
  devmodel_submit(m, &huge, 10, &c, &err);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(err,
               "devmodel_submit: read or write longer than 1 GiB (no device transfers that much "
               "in one command)");
  EXPECT_EQ(c.deadline_ns, 10u);
  devmodel_free(err);
  err = nullptr;
  devmodel_request limit = {DEVMODEL_OP_READ, 0, 0, 1ull << 30, 2};
  devmodel_submit(m, &limit, 20, &c, &err);
  EXPECT_EQ(err, nullptr);
  devmodel_request trim_all = {DEVMODEL_OP_TRIM, 0, 0, devmodel_capacity_bytes(m), 3};
  devmodel_submit(m, &trim_all, 30, &c, &err);  // trims have no such limit
  EXPECT_EQ(err, nullptr);
  devmodel_close(m);
}

}  // namespace
