// Fixtures shared by the SSD model's tests: a small drive's configuration,
// the model NewSsd builds from it, a request, and the counters as JSON.
// Test-only; fixed seeds.
#ifndef DEVMODEL_SRC_SSD_TEST_UTIL_H_
#define DEVMODEL_SRC_SSD_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "devmodel/ssd.h"
#include "ssd_model.h"
#include "test_util.h"

namespace devmodel::testing {

// 4 channels x 2 dies x 2 planes, 64 blocks of 64 pages of 16 KiB (256 MiB
// raw), 50 us read, 500 us program, 3 ms erase, 800 MB/s channels, a
// 3200 MB/s link, 4 us per command and a 1 MiB write buffer.
inline SsdConfig SmallSsdConfig() {
  SsdConfig c;
  c.channels = 4;
  c.dies_per_channel = 2;
  c.planes_per_die = 2;
  c.blocks_per_plane = 64;
  c.pages_per_block = 64;
  c.page_bytes = 16384;
  c.page_read_ns = 50000;
  c.page_program_ns = 500000;
  c.block_erase_ns = 3000000;
  c.channel_mb_s = 800;
  c.host_link_mb_s = 3200;
  c.controller_overhead_ns = 4000;
  c.write_buffer_bytes = 1 << 20;
  return c;
}

// The model NewSsd builds; fails the test (and returns null) if it refuses.
inline std::unique_ptr<internal::SsdModel> MakeSsd(const SsdConfig& c, std::uint64_t seed = 1) {
  std::string error;
  auto device = NewSsd(c, seed, &error);
  EXPECT_NE(device, nullptr) << error;
  return std::unique_ptr<internal::SsdModel>(static_cast<internal::SsdModel*>(device.release()));
}

inline Request Rq(Op op, std::uint64_t offset, std::uint64_t length, std::uint32_t queue_id = 0) {
  Request r;
  r.op = op;
  r.offset_bytes = offset;
  r.length_bytes = length;
  r.queue_id = queue_id;
  return r;
}

inline nlohmann::json Counters(const Device& d) { return nlohmann::json::parse(d.CountersJson()); }

}  // namespace devmodel::testing

#endif  // DEVMODEL_SRC_SSD_TEST_UTIL_H_
