// Cloud block volume (EBS gp2/gp3-style) as a stage in front of a backing
// device: token buckets for IOPS and bandwidth, gp2-style burst credits, I/O
// size accounting (up to io_unit_bytes counts as one I/O, larger as several),
// and a network latency floor with seeded exponential jitter. Throttled
// requests wait; they never fail. A slow fault lowers the IOPS and bandwidth
// limits for its window (Device::ScaleRateLimit: a request submitted in it
// takes k times its share of each; burst credits are spent and refilled as
// always). Why: on cloud VMs the throttle, not the
// media, decides latency once a workload exceeds its baseline.
// Thread-safety: see Device.
#ifndef DEVMODEL_CLOUD_H_
#define DEVMODEL_CLOUD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "devmodel/device.h"

namespace devmodel {

struct CloudConfig {
  // Exported size; 0 = the backing device's capacity. The IOPS baseline of a
  // gp2-style volume is computed from it.
  std::uint64_t capacity_bytes = 0;

  // gp2-style baseline: clamp(iops_per_gib * GiB, iops_baseline_min,
  // iops_baseline_max). 0 disables and uses iops_cap as a fixed cap (gp3).
  std::uint32_t iops_per_gib = 0;
  std::uint32_t iops_baseline_min = 100;
  std::uint32_t iops_baseline_max = 16000;
  std::uint32_t iops_cap = 3000;  // fixed IOPS cap (gp3) when iops_per_gib == 0

  // Burst bucket (gp2): while credits last, I/O runs at iops_burst; credits
  // refill at the baseline rate and the bucket starts full. 0 = no burst.
  std::uint32_t iops_burst = 0;
  std::uint64_t burst_credits = 5400000;  // bucket size in I/O credits

  std::uint32_t throughput_mib_s = 125;  // bandwidth cap, MiB/s (2^20 bytes)
  std::uint32_t io_unit_bytes = 262144;  // accounting unit: 256 KiB

  std::uint64_t latency_floor_ns = 500000;        // network round trip floor
  std::uint64_t latency_jitter_mean_ns = 100000;  // mean of the exponential part
};

// Wraps `backing`. A backing deadline that is not final (an SSD's read waiting
// for the host link, an HDD choosing by SPTF) is passed on as a poll time, and
// the network time is added once the backing's deadline is final. Returns
// nullptr and sets *error on an invalid config. `seed` drives the network jitter.
std::unique_ptr<Device> NewCloudVolume(const CloudConfig& config, std::unique_ptr<Device> backing,
                                       std::uint64_t seed, std::string* error);

}  // namespace devmodel

#endif  // DEVMODEL_CLOUD_H_
