#include "devmodel/cloud.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "model_state.h"
#include "rng.h"

namespace devmodel {
namespace {

constexpr std::int64_t kNanoPerCredit = 1000000000;  // credits kept in 1e-9 units
// Credits fit an int64 in 1e-9 units (gp2's bucket holds 5.4 million).
constexpr std::uint64_t kMaxBurstCredits = 1000000000;

class CloudVolume final : public Device {
 public:
  CloudVolume(const CloudConfig& c, std::unique_ptr<Device> backing, std::uint64_t seed,
              std::uint64_t capacity, std::uint32_t baseline)
      : c_(c),
        backing_(std::move(backing)),
        rng_(seed),
        capacity_(capacity),
        baseline_iops_(baseline),
        burst_iops_(c.iops_burst > baseline ? c.iops_burst : 0),
        credits_nano_(static_cast<std::int64_t>(c.burst_credits) * kNanoPerCredit) {}

  Completion Submit(const Request& r, TimeNs now) override {
    ++requests_;
    std::uint64_t units = 0;
    if (r.op == Op::kRead || r.op == Op::kWrite) {
      units =
          std::max<std::uint64_t>(1, (r.length_bytes + c_.io_unit_bytes - 1) / c_.io_unit_bytes);
    }
    io_units_ += units;
    std::uint64_t start_ps = std::max(now * 1000, last_start_ps_);
    if (units > 0) {
      start_ps = std::max({start_ps, iops_tat_ps_, bw_tat_ps_});
      std::uint64_t rate = baseline_iops_;
      if (burst_iops_ != 0) {
        RefillTo(start_ps / 1000);
        const std::int64_t need = static_cast<std::int64_t>(units) * kNanoPerCredit;
        if (credits_nano_ < need) {
          // Wait for the missing credits at the baseline refill rate.
          const std::int64_t wait_ns = (need - credits_nano_ + baseline_iops_ - 1) / baseline_iops_;
          start_ps += static_cast<std::uint64_t>(wait_ns) * 1000;
          RefillTo(start_ps / 1000);
        }
        credits_nano_ = std::max<std::int64_t>(0, credits_nano_ - need);
        rate = burst_iops_;
      }
      // A request's share of each limit, k times it while a slow fault
      // lowers them (ScaleRateLimit).
      iops_tat_ps_ = start_ps + Scaled(units * 1000000000000ull / rate);
      bw_tat_ps_ = std::max(bw_tat_ps_, start_ps) +
                   Scaled(static_cast<std::uint64_t>(
                       static_cast<unsigned __int128>(r.length_bytes) * 1000000000000ull /
                       (std::uint64_t{c_.throughput_mib_s} * 1048576ull)));
    }
    last_start_ps_ = start_ps;
    const TimeNs start = (start_ps + 999) / 1000;
    throttled_ns_ += start - now;
    const Completion inner = backing_->Submit(r, start);
    const auto jitter =
        static_cast<TimeNs>(rng_.Exponential(static_cast<double>(c_.latency_jitter_mean_ns)));
    if (!inner.final) {  // the network leg is added once the backing's deadline is final
      network_ns_[r.tag] = c_.latency_floor_ns + jitter;
      return inner;
    }
    return {inner.deadline_ns + c_.latency_floor_ns + jitter, true};
  }

  Completion Poll(std::uint64_t tag, TimeNs now) override {
    const auto it = network_ns_.find(tag);
    if (it == network_ns_.end()) return {now, true};  // unknown tag
    Completion c = backing_->Poll(tag, now);
    if (c.final) {
      c.deadline_ns += it->second;
      network_ns_.erase(it);
    }
    return c;
  }
  bool Cancel(std::uint64_t tag) override {
    const bool had = network_ns_.erase(tag) > 0;
    return backing_->Cancel(tag) || had;
  }
  bool ScaleRateLimit(std::uint64_t factor_ppm) override {
    rate_factor_ppm_ = std::max<std::uint64_t>(factor_ppm, 1000000);
    return true;
  }
  bool deadlines_final() const override { return backing_->deadlines_final(); }

  std::uint64_t capacity_bytes() const override { return capacity_; }
  std::uint32_t logical_block_bytes() const override { return backing_->logical_block_bytes(); }

  std::string CountersJson() const override {
    nlohmann::json j;
    j["model"] = "cloud";
    j["requests"] = requests_;
    j["io_units"] = io_units_;
    j["iops_baseline"] = baseline_iops_;
    j["iops_burst"] = burst_iops_;
    j["credits_left"] = CreditsAt(credits_time_ns_);
    j["credits_time_ns"] = credits_time_ns_;
    j["throttled_ns"] = throttled_ns_;
    j["backing"] = nlohmann::json::parse(backing_->CountersJson());
    return j.dump();
  }
  bool SaveState(std::string* out, std::string* why) const override {
    if (!network_ns_.empty()) {
      *why = "cloud volume: " + std::to_string(network_ns_.size()) +
             " request(s) whose backing deadline is not final yet";
      return false;
    }
    if (rate_factor_ppm_ != 1000000) {
      *why = "cloud volume: a slow fault's lowered rate limit is in effect";
      return false;
    }
    const std::size_t before = out->size();
    internal::StateWriter w(out);
    std::uint64_t words[4];
    rng_.SaveWords(words);
    for (std::uint64_t v : words) w.Put(v);
    w.Put(static_cast<std::uint64_t>(credits_nano_));
    for (std::uint64_t v : {credits_time_ns_, iops_tat_ps_, bw_tat_ps_, last_start_ps_, requests_,
                            io_units_, throttled_ns_}) {
      w.Put(v);
    }
    if (!backing_->SaveState(out, why)) {
      out->resize(before);
      return false;
    }
    return true;
  }
  bool LoadState(internal::StateReader* in, std::string* why) override {
    std::uint64_t words[4];
    for (std::uint64_t& v : words) v = in->Get();
    rng_.LoadWords(words);
    credits_nano_ = static_cast<std::int64_t>(in->Get());
    for (std::uint64_t* v : {&credits_time_ns_, &iops_tat_ps_, &bw_tat_ps_, &last_start_ps_,
                             &requests_, &io_units_, &throttled_ns_}) {
      *v = in->Get();
    }
    const std::int64_t cap = static_cast<std::int64_t>(c_.burst_credits) * kNanoPerCredit;
    if (!in->ok() || credits_nano_ < 0 || credits_nano_ > cap) {
      *why = "cloud state: truncated or credits out of range";
      return false;
    }
    return backing_->LoadState(in, why);
  }
  std::uint64_t MemoryBytes() const override {
    return sizeof(*this) + backing_->MemoryBytes() +
           network_ns_.size() * (2 * sizeof(std::uint64_t) + 2 * sizeof(void*));
  }

 private:
  double CreditsAt(TimeNs t) const {
    if (burst_iops_ == 0) return 0.0;
    const std::int64_t cap = static_cast<std::int64_t>(c_.burst_credits) * kNanoPerCredit;
    const std::int64_t gained = static_cast<std::int64_t>(t - credits_time_ns_) * baseline_iops_;
    return static_cast<double>(std::min(cap, credits_nano_ + gained)) / kNanoPerCredit;
  }
  // `ps` of a limit's time x rate_factor_ppm_ / 1e6 (saturating).
  std::uint64_t Scaled(std::uint64_t ps) const {
    if (rate_factor_ppm_ == 1000000) return ps;
    const unsigned __int128 v = static_cast<unsigned __int128>(ps) * rate_factor_ppm_ / 1000000u;
    return v > (~std::uint64_t{0} >> 2) ? (~std::uint64_t{0} >> 2) : static_cast<std::uint64_t>(v);
  }
  void RefillTo(TimeNs t) {
    if (t <= credits_time_ns_) return;
    const std::int64_t cap = static_cast<std::int64_t>(c_.burst_credits) * kNanoPerCredit;
    // A gap long enough to fill the bucket fills it; only a shorter one is
    // multiplied out (dt x baseline < cap <= 1e18: no overflow).
    const auto fill_ns = static_cast<TimeNs>((cap - credits_nano_) / baseline_iops_ + 1);
    const TimeNs dt = t - credits_time_ns_;
    credits_nano_ = dt >= fill_ns
                        ? cap
                        : std::min<std::int64_t>(
                              cap, credits_nano_ + static_cast<std::int64_t>(dt) * baseline_iops_);
    credits_time_ns_ = t;
  }

  CloudConfig c_;
  std::unique_ptr<Device> backing_;
  internal::Rng rng_;
  std::uint64_t capacity_;
  std::uint32_t baseline_iops_, burst_iops_;
  std::int64_t credits_nano_;
  TimeNs credits_time_ns_ = 0;
  std::uint64_t iops_tat_ps_ = 0, bw_tat_ps_ = 0, last_start_ps_ = 0;
  std::uint64_t requests_ = 0, io_units_ = 0, throttled_ns_ = 0;
  // ScaleRateLimit: each request's share of the limits x this / 1e6.
  std::uint64_t rate_factor_ppm_ = 1000000;
  // Per tag whose backing deadline is not final yet: the network time to add.
  std::unordered_map<std::uint64_t, TimeNs> network_ns_;
};

}  // namespace

std::unique_ptr<Device> NewCloudVolume(const CloudConfig& c, std::unique_ptr<Device> backing,
                                       std::uint64_t seed, std::string* error) {
  auto fail = [error](std::string msg) -> std::unique_ptr<Device> {
    if (error != nullptr) *error = std::move(msg);
    return nullptr;
  };
  if (backing == nullptr) return fail("cloud: no backing device");
  const std::uint64_t capacity =
      c.capacity_bytes == 0 ? backing->capacity_bytes() : c.capacity_bytes;
  if (capacity > backing->capacity_bytes() || capacity % backing->logical_block_bytes() != 0) {
    return fail("cloud.capacity_bytes (" + std::to_string(capacity) + ") must be in [1, " +
                std::to_string(backing->capacity_bytes()) +
                "] (the backing device's capacity) and a multiple of its logical block size (" +
                std::to_string(backing->logical_block_bytes()) + ")");
  }
  if (c.throughput_mib_s == 0) return fail("cloud.throughput_mib_s must be in [1, 100000]");
  if (c.burst_credits > kMaxBurstCredits) {
    return fail("cloud.burst_credits must be in [0, " + std::to_string(kMaxBurstCredits) + "]");
  }
  if (c.io_unit_bytes == 0) return fail("cloud.io_unit_bytes must be in [4096, 16777216]");
  std::uint32_t baseline = c.iops_cap;
  if (c.iops_per_gib != 0) {
    if (c.iops_baseline_min > c.iops_baseline_max) {
      return fail("cloud.iops_baseline_min (" + std::to_string(c.iops_baseline_min) +
                  ") must be <= cloud.iops_baseline_max (" + std::to_string(c.iops_baseline_max) +
                  ")");
    }
    const std::uint64_t gib = capacity >> 30;
    baseline = static_cast<std::uint32_t>(
        std::clamp<std::uint64_t>(gib * c.iops_per_gib, c.iops_baseline_min, c.iops_baseline_max));
  }
  if (baseline == 0) return fail("cloud: the IOPS baseline (cloud.iops_cap) must be >= 1");
  return std::make_unique<CloudVolume>(c, std::move(backing), seed, capacity, baseline);
}

}  // namespace devmodel
