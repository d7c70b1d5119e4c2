// Hard disk timing model: zoned recording (outer zones hold more sectors per
// track, so they are faster), a seek curve fitted to datasheet figures
// (square root for short seeks, linear for long ones), rotational position
// derived from `now`, head switch and write settle, an on-disk cache with
// read-ahead and optional write-back, and an internal queue served FIFO or by
// shortest positioning time first (SPTF, what NCQ drives do).
// Why: seek and rotation dominate HDD latency and are what bfq and
// mq-deadline were designed around.
// Thread-safety: see Device.
#ifndef DEVMODEL_HDD_H_
#define DEVMODEL_HDD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devmodel/device.h"

namespace devmodel {

enum class QueuePolicy : std::uint8_t { kFifo = 0, kSptf = 1 };

struct HddConfig {
  std::uint64_t capacity_bytes = 1000204886016ull;  // 1 TB (IDEMA LBA count x 512)
  std::uint32_t logical_block_bytes = 512;
  std::uint32_t rpm = 7200;
  std::uint32_t heads = 2;  // recording surfaces
  // Sustained media rate of each zone, outermost first, in MB/s (1e6 B/s);
  // every zone has the same number of cylinders. Sectors per track are derived
  // so that a zone's sequential rate, track switches included, equals this.
  std::vector<double> zone_mb_s = {210.0, 180.0, 150.0, 120.0};
  // Seek curve, ns: one cylinder, average over random LBA pairs, full stroke.
  std::uint64_t track_to_track_seek_ns = 1000000;
  std::uint64_t average_seek_ns = 8500000;
  std::uint64_t full_stroke_seek_ns = 17000000;
  std::uint64_t head_switch_ns = 1000000;  // also the track skew
  std::uint64_t write_settle_ns = 500000;  // extra before a write after a seek
  std::uint64_t command_overhead_ns = 50000;
  std::uint32_t interface_mb_s = 600;  // SATA 6 Gb/s payload rate

  std::uint64_t cache_bytes = 64ull << 20;      // write-back budget for dirty data
  std::uint64_t read_ahead_bytes = 1ull << 20;  // read-ahead window after a read
  std::uint32_t cache_segments = 16;            // read-ahead segments kept
  bool write_cache = true;                      // false = write-through
  std::uint64_t flush_overhead_ns = 100000;     // FLUSH CACHE on a clean cache

  QueuePolicy queue_policy = QueuePolicy::kFifo;
  std::uint64_t sptf_max_wait_ns = 500000000;  // oldest first after this wait
};

// Returns nullptr and sets *error if the config is invalid (names the field
// and the allowed range).
std::unique_ptr<Device> NewHdd(const HddConfig& config, std::string* error);

}  // namespace devmodel

#endif  // DEVMODEL_HDD_H_
