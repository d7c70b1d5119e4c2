#include "hdd_geometry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace devmodel::internal {
namespace {

// Nanoseconds as milliseconds with up to 3 decimals, as profiles give them.
std::string Ms(double ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", ns / 1e6);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

HddGeometry::HddGeometry(const HddConfig& c, std::string* error)
    : heads_(c.heads), bytes_per_sector_(c.logical_block_bytes), per_heads_(std::max(1u, c.heads)) {
  auto fail = [&](std::string msg) {
    if (error != nullptr) *error = std::move(msg);
  };
  if (c.rpm < 1000 || c.rpm > 20000) {
    fail("hdd.rpm must be in [1000, 20000]");
    return;
  }
  if (c.heads < 1 || c.heads > 64) {
    fail("hdd.heads must be in [1, 64]");
    return;
  }
  if (c.logical_block_bytes != 512 && c.logical_block_bytes != 4096) {
    fail("hdd.logical_block_bytes must be 512 or 4096");
    return;
  }
  if (c.zone_mb_s.empty() || c.zone_mb_s.size() > 256) {
    fail("hdd.zone_mb_s must list 1 to 256 zones, got " + std::to_string(c.zone_mb_s.size()));
    return;
  }
  if (c.capacity_bytes < (1ull << 20) || c.capacity_bytes % c.logical_block_bytes != 0) {
    fail("hdd.capacity_bytes (" + std::to_string(c.capacity_bytes) +
         ") must be >= 1 MiB and a multiple of hdd.logical_block_bytes (" +
         std::to_string(c.logical_block_bytes) + ")");
    return;
  }
  rev_ps_ = 60000000000000ull / c.rpm;
  total_sectors_ = c.capacity_bytes / c.logical_block_bytes;
  const std::uint64_t switch_ps = std::max(c.head_switch_ns, c.track_to_track_seek_ns) * 1000;
  if (switch_ps >= rev_ps_ / 2) {
    fail("hdd.head_switch_ms and hdd.track_to_track_seek_ms must be below half a revolution (" +
         Ms(static_cast<double>(rev_ps_ / 2) / 1e3) + " ms at " + std::to_string(c.rpm) + " rpm)");
    return;
  }
  std::vector<std::uint32_t> spt(c.zone_mb_s.size()), skew(c.zone_mb_s.size());
  std::uint64_t sum_spt = 0;
  for (std::size_t z = 0; z < c.zone_mb_s.size(); ++z) {
    const double want = c.zone_mb_s[z] * 1e6;
    if (!(want >= 1e6 && want <= 5e9)) {
      fail("hdd.zone_mb_s values must be in [1, 5000]");
      return;
    }
    const double rev_s = static_cast<double>(rev_ps_) * 1e-12;
    const double guess = want * rev_s / bytes_per_sector_ *
                         (1.0 + static_cast<double>(switch_ps) / static_cast<double>(rev_ps_));
    double best_err = 1e300;
    const auto lo = static_cast<std::uint32_t>(std::max(1.0, guess * 0.8));
    const auto hi = static_cast<std::uint32_t>(guess * 1.2 + 2);
    for (std::uint32_t s = lo; s <= hi; ++s) {
      const std::uint32_t k = static_cast<std::uint32_t>(
          (static_cast<unsigned __int128>(switch_ps) * s + rev_ps_ - 1) / rev_ps_);
      const double rate = static_cast<double>(s) * s * bytes_per_sector_ * 1e12 /
                          (static_cast<double>(s + k) * static_cast<double>(rev_ps_));
      if (std::fabs(rate - want) < best_err) {
        best_err = std::fabs(rate - want);
        spt[z] = s;
        skew[z] = k;
      }
    }
    sum_spt += spt[z];
  }
  const std::uint64_t cyl_per_zone = (total_sectors_ + heads_ * sum_spt - 1) / (heads_ * sum_spt);
  std::uint64_t lba = 0;
  for (std::size_t z = 0; z < spt.size() && lba < total_sectors_; ++z) {
    HddZone zone;
    zone.first_lba = lba;
    zone.first_cylinder = static_cast<std::uint32_t>(z * cyl_per_zone);
    zone.first_track = zone.first_cylinder * std::uint64_t{heads_};
    zone.sectors_per_track = spt[z];
    zone.skew_slots = skew[z];
    zone.per_track = FastDivU32(spt[z]);
    zone.slot_ps = rev_ps_ / spt[z];
    zone.slot_ps_rem = static_cast<std::uint32_t>(rev_ps_ % spt[z]);
    zone_first_lba_.push_back(lba);
    lba = std::min(total_sectors_, lba + cyl_per_zone * heads_ * spt[z]);
    zone.end_lba = lba;
    zones_.push_back(zone);
  }
  cylinders_ = static_cast<std::uint32_t>(zones_.size() * cyl_per_zone);

  // Seek curve fit over an LBA-weighted histogram of cylinder distances.
  t1_ = static_cast<double>(c.track_to_track_seek_ns);
  tfull_ = static_cast<double>(c.full_stroke_seek_ns);
  const double maxd = cylinders_ > 1 ? cylinders_ - 1.0 : 1.0;
  knee_ = std::max(2.0, maxd / 3.0);
  if (!(t1_ > 0 && t1_ < tfull_)) {
    fail("hdd.track_to_track_seek_ms (" + Ms(t1_) +
         ") must be above 0 and below hdd.full_stroke_seek_ms (" + Ms(tfull_) + ")");
    return;
  }
  const std::uint32_t buckets = std::min<std::uint32_t>(1024, cylinders_);
  const double width = static_cast<double>(cylinders_) / buckets;
  std::vector<double> w(buckets);
  for (std::uint32_t i = 0; i < buckets; ++i) {
    const auto center = static_cast<std::uint32_t>((i + 0.5) * width);
    const std::uint32_t z = std::min<std::uint32_t>(
        static_cast<std::uint32_t>(center / cyl_per_zone), zones_.size() - 1);
    w[i] = zones_[z].sectors_per_track;
  }
  double total = 0;
  for (double x : w) total += x;
  bucket_weight_.assign(buckets, 0.0);  // histogram by bucket distance
  bucket_cyl_.assign(buckets, 0.0);
  for (std::uint32_t i = 0; i < buckets; ++i) {
    for (std::uint32_t j = 0; j < buckets; ++j) {
      bucket_weight_[i > j ? i - j : j - i] += w[i] * w[j] / (total * total);
    }
  }
  for (std::uint32_t k = 0; k < buckets; ++k) bucket_cyl_[k] = k == 0 ? width / 3.0 : k * width;
  const double target = static_cast<double>(c.average_seek_ns);
  double lo = 0, hi = (tfull_ - t1_) / (std::sqrt(knee_) - 1.0);
  if (MeanSeek(lo) > target || MeanSeek(hi) < target) {
    fail("hdd.average_seek_ms (" + Ms(target) + ") must be in [" + Ms(MeanSeek(lo)) + ", " +
         Ms(MeanSeek(hi)) + "] for these hdd.track_to_track_seek_ms and hdd.full_stroke_seek_ms");
    return;
  }
  for (int it = 0; it < 60; ++it) {
    const double mid = 0.5 * (lo + hi);
    (MeanSeek(mid) < target ? lo : hi) = mid;
  }
  a_ = 0.5 * (lo + hi);
  mean_seek_ns_ = MeanSeek(a_);
  ok_ = true;
}

double HddGeometry::CurveNs(double d, double a) const {
  if (d <= 0) return 0;
  if (d < 1) return t1_ * d;
  if (d <= knee_) return t1_ + a * (std::sqrt(d) - 1.0);
  const double tk = t1_ + a * (std::sqrt(knee_) - 1.0);
  const double maxd = std::max(knee_ + 1.0, cylinders_ - 1.0);
  return tk + (tfull_ - tk) * (d - knee_) / (maxd - knee_);
}

double HddGeometry::MeanSeek(double a) const {
  double sum = 0;
  for (std::size_t k = 0; k < bucket_weight_.size(); ++k) {
    sum += bucket_weight_[k] * CurveNs(bucket_cyl_[k], a);
  }
  return sum;
}

std::uint64_t HddGeometry::SeekNs(std::uint32_t cylinders) const {
  if (cylinders == 0) return 0;
  return static_cast<std::uint64_t>(CurveNs(cylinders, a_) + 0.5);
}

HddPosition HddGeometry::Locate(std::uint64_t lba) const {
  // Zone starts increase strictly: the zone is the last one starting <= lba.
  const auto z = static_cast<std::uint32_t>(
      std::upper_bound(zone_first_lba_.begin() + 1, zone_first_lba_.end(), lba) -
      zone_first_lba_.begin() - 1);
  const HddZone& zone = zones_[z];
  const std::uint64_t track_in_zone = TrackInZone(zone, lba);
  HddPosition p;
  p.zone = z;
  p.sector =
      static_cast<std::uint32_t>(lba - zone.first_lba - track_in_zone * zone.sectors_per_track);
  if (track_in_zone <= 0xFFFFFFFFu) {
    const std::uint32_t cylinders = per_heads_.Div(static_cast<std::uint32_t>(track_in_zone));
    p.cylinder = zone.first_cylinder + cylinders;
    p.head = static_cast<std::uint32_t>(track_in_zone) - cylinders * heads_;
  } else {
    p.cylinder = zone.first_cylinder + static_cast<std::uint32_t>(track_in_zone / heads_);
    p.head = static_cast<std::uint32_t>(track_in_zone % heads_);
  }
  p.track = zone.first_track + track_in_zone;
  const std::uint64_t track_mod = p.track <= 0xFFFFFFFFu
                                      ? zone.per_track.Mod(static_cast<std::uint32_t>(p.track))
                                      : p.track % zone.sectors_per_track;
  const std::uint64_t angle = p.sector + track_mod * zone.skew_slots;
  p.slot = static_cast<std::uint32_t>(angle <= 0xFFFFFFFFu
                                          ? zone.per_track.Mod(static_cast<std::uint32_t>(angle))
                                          : angle % zone.sectors_per_track);
  return p;
}

double HddGeometry::ZoneRateBytesPerSec(std::uint32_t z) const {
  const HddZone& zone = zones_[z];
  const double s = zone.sectors_per_track;
  return s * s * bytes_per_sector_ * 1e12 / ((s + zone.skew_slots) * static_cast<double>(rev_ps_));
}

}  // namespace devmodel::internal
