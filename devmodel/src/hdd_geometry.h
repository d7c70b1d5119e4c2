// HDD geometry and mechanics without state: LBA -> (zone, cylinder, head,
// angular slot), the seek curve and rotational timing. The seek curve is
// t(d) = t1 + A (sqrt(d) - 1) up to a knee at a third of the stroke, linear
// from there to the full-stroke time, with A fitted (bisection) so that the
// mean over pairs of uniformly random LBAs equals the datasheet average seek.
// Angular positions are integer picoseconds into a revolution, so sequential
// transfers continue exactly where the previous one ended.
// Thread-safety: immutable after construction.
#ifndef DEVMODEL_SRC_HDD_GEOMETRY_H_
#define DEVMODEL_SRC_HDD_GEOMETRY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "devmodel/hdd.h"
#include "fast_div.h"

namespace devmodel::internal {

struct HddZone {
  std::uint64_t first_lba = 0, end_lba = 0;  // sectors [first, end)
  std::uint64_t first_track = 0;             // global track number (cyl * heads + head)
  std::uint32_t first_cylinder = 0;
  std::uint32_t sectors_per_track = 0;
  std::uint32_t skew_slots = 0;  // angular offset between consecutive tracks
  // Derived: division by sectors_per_track, and rev_ps = slot_ps *
  // sectors_per_track + slot_ps_rem (so SlotPs needs no 128-bit division).
  FastDivU32 per_track;
  std::uint64_t slot_ps = 0;
  std::uint32_t slot_ps_rem = 0;
};

struct HddPosition {
  std::uint32_t zone = 0, cylinder = 0, head = 0;
  std::uint64_t track = 0;   // global track
  std::uint32_t sector = 0;  // within the track
  std::uint32_t slot = 0;    // angular slot in [0, sectors_per_track)
};

class HddGeometry {
 public:
  // On error returns with ok() == false and *error set.
  HddGeometry(const HddConfig& config, std::string* error);
  bool ok() const { return ok_; }

  HddPosition Locate(std::uint64_t lba) const;
  std::uint64_t SeekNs(std::uint32_t cylinders) const;
  // Angular offset (ps from slot 0) of `slot` (may exceed sectors_per_track):
  // floor(slot * rev_ps / sectors_per_track), modulo 2^64.
  std::uint64_t SlotPs(const HddZone& z, std::uint64_t slot) const {
    if (slot <= 0xFFFFFFFFu) {
      const std::uint64_t rem = slot * z.slot_ps_rem;
      if (rem <= 0xFFFFFFFFu) {
        return slot * z.slot_ps + z.per_track.Div(static_cast<std::uint32_t>(rem));
      }
    }
    return static_cast<std::uint64_t>(static_cast<unsigned __int128>(slot) * rev_ps_ /
                                      z.sectors_per_track);
  }
  // Angular slots swept reading [first, end) sequentially from the start of
  // `first`, track switches included. REQUIRES: same zone, end > first.
  std::uint64_t SweepSlots(const HddZone& z, std::uint64_t first, std::uint64_t end) const {
    const std::uint64_t tracks = TrackInZone(z, end - 1) - TrackInZone(z, first);
    return (end - first) + tracks * z.skew_slots;
  }
  // Rotational position at `t_ns`, ps into the revolution.
  std::uint64_t AngleAtPs(std::uint64_t t_ns) const {
    if (t_ns <= ~std::uint64_t{0} / 1000) return t_ns * 1000 % rev_ps_;
    return static_cast<std::uint64_t>(static_cast<unsigned __int128>(t_ns) * 1000 % rev_ps_);
  }
  // Sequential media rate of zone `z`, bytes per second (what the profile asked for).
  double ZoneRateBytesPerSec(std::uint32_t z) const;

  const std::vector<HddZone>& zones() const { return zones_; }
  const HddZone& zone(std::uint32_t z) const { return zones_[z]; }
  std::uint64_t rev_ps() const { return rev_ps_; }
  std::uint32_t cylinders() const { return cylinders_; }
  std::uint64_t total_sectors() const { return total_sectors_; }
  double MeanRandomSeekNs() const { return mean_seek_ns_; }

 private:
  double CurveNs(double d, double a) const;
  double MeanSeek(double a) const;
  static std::uint64_t TrackInZone(const HddZone& z, std::uint64_t lba) {
    const std::uint64_t off = lba - z.first_lba;
    return off <= 0xFFFFFFFFu ? z.per_track.Div(static_cast<std::uint32_t>(off))
                              : off / z.sectors_per_track;
  }

  bool ok_ = false;
  std::uint32_t heads_;
  std::uint32_t bytes_per_sector_;
  std::uint64_t rev_ps_;
  std::uint64_t total_sectors_;
  std::uint32_t cylinders_ = 0;
  std::vector<HddZone> zones_;
  std::vector<std::uint64_t> zone_first_lba_;  // zones_[i].first_lba, for binary search
  FastDivU32 per_heads_;
  double t1_, tfull_, knee_, a_ = 0, mean_seek_ns_ = 0;
  std::vector<double> bucket_weight_, bucket_cyl_;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_HDD_GEOMETRY_H_
