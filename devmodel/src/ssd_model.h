// SsdModel: the timing half of the SSD (the mapping half is Ftl). Every die and
// channel has a busy-until timeline; a request reserves time on the ones it
// touches, so conflicts, GC and write-buffer drain show up as waits. Requests
// enter in arrival order through an internal concurrency limit; a command
// beyond it starts when the earliest earlier command completes. With
// Arbitration::kRoundRobin reads and writes have separate limits (pipelines
// of slots), and a per-queue limit keeps a queue's backlog out of the slots
// other queues need. Optional SLC cache: host program units take the SLC
// program time while it has room and are folded into TLC on the dies when
// the drive is idle (see SsdConfig); TLC page types and read retry set a
// page read's sensing time; gc_yield books GC page moves one by one.
// Simplifications (stated so nobody relies on them): a read of a unit never
// written or trimmed costs no NAND time; a partial-unit write counts as a
// whole unit (no read-modify-write); GC moves occupy the die and its channel
// but not the host link; reads are scheduled ahead of program/erase work that
// has not started (controllers prioritize reads), which then finishes later
// by the read's duration, but deadlines already given are not revised.
// A read moves its data in two stages, each served in the order the data is
// ready there (ties in submission order), as a controller moves a page when
// it is sensed and sends a read when its data is in: each page's channel
// (from when the die has sensed it), then the host link (host_link_mb_s !=
// 0; from when the read's last page is in the controller). A read's Submit
// returns, as a poll time (not final), when its last page is sensed; a Poll
// then gives when its data is in the controller (not final) and then its
// end. Each stage's order depends only on data ready no later, whose reads
// were all submitted by then (sensing takes time), so deadlines stay a
// function of the request stream. A die's sensing unit is free once its
// page's own transfer time has passed (the page moves to a cache register;
// a wait for the channel does not hold the die), and a read holds its
// admission slot until its pages are sensed plus its own transfer times.
// Writes, GC and SLC folds book their channel transfers apart from reads:
// each takes the earliest gap on its channel at or after it can start, so a
// transfer booked for later (a die's GC behind its queued work) does not
// hold back another die's transfer that fits before it. The link takes a
// write's data when the host sends it, after buffer space.
// Thread-safety: none (see Device).
#ifndef DEVMODEL_SRC_SSD_MODEL_H_
#define DEVMODEL_SRC_SSD_MODEL_H_

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <vector>

#include "devmodel/ssd.h"
#include "devmodel/tag_map.h"
#include "ftl.h"
#include "model_state.h"
#include "ring.h"
#include "rng.h"

namespace devmodel::internal {

class SsdModel final : public Device, private FtlListener {
 public:
  // REQUIRES: config validated by NewSsd.
  SsdModel(const SsdConfig& config, const FtlGeometry& geometry, std::uint64_t seed,
           const SsdStateCache& cache = {});

  Completion Submit(const Request& r, TimeNs now) override;
  // A read's next stage (see above).
  Completion Poll(std::uint64_t tag, TimeNs now) override;
  // A cancelled read's page and link transfers still take their time.
  bool Cancel(std::uint64_t tag) override { return reads_.Erase(tag); }
  bool deadlines_final() const override { return false; }  // reads: see above
  std::uint64_t capacity_bytes() const override { return capacity_bytes_; }
  std::uint32_t logical_block_bytes() const override { return c_.logical_block_bytes; }
  std::string CountersJson() const override;
  std::uint64_t MemoryBytes() const override;
  // model_state.h; refused while a read is not final. LoadState REQUIRES a
  // model built with Precondition::kNone (the state holds the FTL's).
  bool SaveState(std::string* out, std::string* why) const override;
  bool LoadState(StateReader* in, std::string* why) override;

  const Ftl& ftl() const { return ftl_; }
  // True if the precondition's state came from a state file (state_cache.h).
  bool state_loaded() const { return state_loaded_; }
  std::uint32_t DieOfOffset(std::uint64_t offset_bytes) const;  // -1u if unmapped
  std::uint32_t die_count() const { return static_cast<std::uint32_t>(dies_.size()); }
  TimeNs die_busy_until(std::uint32_t die) const { return die_busy_until_[die]; }

 private:
  struct InflightProgram {
    std::uint32_t block, first_slot, end_slot;
    TimeNs done;
  };
  // Times as booked minus the die's pe_shift then (see DieTimeline).
  struct PeOp {
    TimeNs start, end;
  };
  struct DieTimeline {
    TimeNs read_busy_until = 0;  // end of the last host read on this die
    std::uint64_t busy_ns = 0;
    // Program/erase operations booked on the die, in time order: a read waits
    // for the one in progress (or suspends it) and overtakes those not started.
    // An operation's times are its stored times + pe_shift: reads that delay
    // booked work add to pe_shift (only with track_pe_shifts_).
    Ring<PeOp> pe_ops;
    TimeNs pe_shift = 0;
    std::uint32_t front_suspends = 0;  // suspends of pe_ops.front()
    Ring<InflightProgram> programs;    // host programs not yet durable
  };
  using MinHeap = std::priority_queue<TimeNs, std::vector<TimeNs>, std::greater<>>;
  // Arbitration::kRoundRobin: one of the read and write pipelines.
  struct Pipeline {
    std::vector<TimeNs> slot_free;  // per slot, when its last command ends; sorted
    std::vector<MinHeap> queues;    // per queue id % kSsdArbitratedQueues: ends
  };
  // Where an admitted command's end is recorded (Submit, once known).
  struct Admission {
    TimeNs start;
    MinHeap* pool;       // kFifo: inflight_
    Pipeline* pipeline;  // kRoundRobin
    MinHeap* queue;      // kRoundRobin with a per-queue limit, else null
  };

  Admission Admit(const Request& r, TimeNs now);
  Admission AdmitRoundRobin(const Request& r, TimeNs now);
  // Senses the pages `r` reads from t0 and queues their channel transfers
  // for the read `seq`; returns when its last page is sensed (t0 if it reads
  // no NAND) and sets the number of pages and when the last of them would be
  // through its channel with no wait.
  TimeNs Read(const Request& r, TimeNs t0, std::uint64_t seq, std::uint32_t* pages,
              TimeNs* own_end);
  TimeNs Write(const Request& r, TimeNs t0);
  TimeNs Flush(TimeNs t0);
  TimeNs Trim(const Request& r, TimeNs t0);
  void BackgroundGc(TimeNs now);
  // Folds SLC program units into TLC on each die from the idle point on;
  // steps that would start at or after `now` wait for the next idle time.
  void FoldSlc(TimeNs now);
  // Puts `work` ns of program/erase-class work on `die` from `start` (the
  // die's timeline and its pe_ops).
  void BookDieWork(std::uint32_t die, TimeNs start, TimeNs work);
  // Drops pe_ops of `die` that ended by the last submit time: ReadPage would
  // drop them too (reads arrive later), so only memory changes.
  void PrunePeOps(std::uint32_t die);
  // Books `xfer` ns of write-side transfer on `channel` in its earliest gap
  // starting at or after `earliest`; returns the start. REQUIRES: earliest
  // >= channel_prune_ (bookings that ended by then are dropped).
  TimeNs BookChannel(std::uint32_t channel, TimeNs earliest, TimeNs xfer);
  // SLC room for one more program unit, given what the host has mapped.
  std::uint64_t SlcCapacityBytes() const;
  // Page type (0 lower, 1 middle, 2 upper) of the program unit holding slot
  // `slot_in_block` of its block: the unit's index in the block, modulo 3.
  std::uint32_t PageTypeOfSlot(std::uint32_t slot_in_block) const {
    return slot_in_block / ftl_.geometry().slots_per_program % 3;
  }
  // Sensing rounds a read retry adds (0 unless read_retry_probability > 0).
  std::uint32_t ReadRetryRounds();
  // Senses `units` of global page `page` on `die`, arriving at `t`; returns
  // when the page is sensed (its channel transfer is queued by the caller).
  TimeNs ReadPage(std::uint32_t die, std::uint32_t page, TimeNs t, std::uint32_t units);
  bool InWriteBuffer(std::uint32_t ppn, TimeNs t);
  // Time `bytes` take on the host link. REQUIRES: host_link_mb_s != 0.
  TimeNs LinkNs(std::uint64_t bytes) {
    if (bytes != link_memo_bytes_) {
      link_memo_bytes_ = bytes;
      link_memo_ns_ = XferNs(bytes, c_.host_link_mb_s);
    }
    return link_memo_ns_;
  }
  TimeNs LinkTransfer(TimeNs* link_busy, TimeNs t, std::uint64_t bytes) {
    if (c_.host_link_mb_s == 0) return t;
    const TimeNs start = std::max(t, *link_busy);
    *link_busy = start + LinkNs(bytes);
    return *link_busy;
  }
  // Serves every queued page transfer whose page is sensed by `now` on its
  // channel, then every read whose data is in the controller by `now` on the
  // host link, each in ready order. All data ready by `now` belongs to reads
  // submitted by then, so each time is final when computed.
  void ServeReads(TimeNs now);
  std::uint32_t ChannelOf(std::uint32_t die) const { return die % c_.channels; }
  // Mapping unit holding byte `offset` (a shift when the unit is a power of 2).
  std::uint64_t UnitOf(std::uint64_t offset) const {
    return unit_shift_ >= 0 ? offset >> unit_shift_ : offset / unit_bytes_;
  }
  static TimeNs XferNs(std::uint64_t bytes, std::uint32_t mb_s) {
    return mb_s == 0 ? 0 : (bytes * 1000 + mb_s - 1) / mb_s;
  }
  // XferNs(units x unit_bytes_, channel_mb_s) for units <= slots per program.
  TimeNs ChannelNs(std::uint32_t units) const { return channel_ns_[units]; }

  // FtlListener: schedules at dispatch_time_.
  void OnHostProgram(std::uint32_t die, std::uint32_t block, std::uint32_t first_slot,
                     std::uint32_t slots, std::uint32_t host_slots) override;
  void OnGcProgram(std::uint32_t die, std::uint32_t pages_read) override;
  void OnErase(std::uint32_t die) override;
  // Builds the FTL state the profile's precondition asks for (on a fresh FTL).
  void RunPrecondition(std::uint64_t seed);
  std::uint32_t NextHostDie(std::uint32_t previous, std::uint32_t dies) override;

  SsdConfig c_;
  std::uint64_t capacity_bytes_;
  std::uint32_t unit_bytes_;
  int unit_shift_;  // log2(unit_bytes_), or -1 if not a power of two
  Ftl ftl_;
  FtlCounters baseline_;  // FTL counters after preconditioning
  bool state_loaded_ = false;
  std::vector<DieTimeline> dies_;
  // Per die, all booked work (reads, programs, GC, erases) ends by then; kept
  // apart from DieTimeline so that picking the least busy die reads 8 lines.
  std::vector<TimeNs> die_busy_until_;
  std::vector<TimeNs> channel_ns_;         // see ChannelNs()
  std::uint64_t link_memo_bytes_ = 0;      // last host-link transfer size...
  TimeNs link_memo_ns_ = 0;                // ...and its duration
  // Per channel, the write-side transfers (programs, GC, folds) booked and
  // not ended by the latest submit: [start, end) in start order, disjoint,
  // from index `head` on (earlier entries are dropped in batches).
  struct ChannelBookings {
    std::vector<std::pair<TimeNs, TimeNs>> busy;
    std::size_t head = 0;
  };
  std::vector<ChannelBookings> channel_busy_;
  std::vector<TimeNs> read_channel_busy_;  // host page transfers (prioritized)
  TimeNs link_in_busy_ = 0, link_out_busy_ = 0;
  // A page transfer (channel) or a read's transfer (host link) waiting for
  // its data; served earliest ready first, ties in submission order (seq:
  // per page for channels, the read's for the link).
  struct Transfer {
    TimeNs ready, xfer;
    std::uint64_t seq, tag, read_seq;
    std::uint32_t channel;  // channel transfers only
    bool operator>(const Transfer& o) const {
      return ready != o.ready ? ready > o.ready : seq > o.seq;
    }
  };
  using TransferQueue = std::priority_queue<Transfer, std::vector<Transfer>, std::greater<>>;
  TransferQueue channel_queue_, link_out_queue_;
  std::uint64_t read_seq_ = 0, page_seq_ = 0;
  // Per tag of a read not yet polled final.
  enum class ReadStage : std::uint8_t { kChannel, kLink, kDone };
  struct ReadState {
    TimeNs time;        // kChannel: its last page sensed; kLink: data in; kDone: end
    TimeNs data_in;     // its pages through their channels with no wait, then the
                        // latest end of its page transfers served so far
    TimeNs link_xfer;   // its own time on the host link
    std::uint64_t seq;  // the read's, in submission order (tags can be reused)
    std::uint32_t pages_left;  // page transfers not yet served
    ReadStage stage;
  };
  // A read whose page transfers are all served: queued for the link, or done.
  void PagesIn(std::uint64_t tag, ReadState* s);
  TagMap<ReadState> reads_;
  MinHeap inflight_;         // kFifo: ends of admitted commands
  Pipeline read_pipeline_;   // kRoundRobin: reads
  Pipeline write_pipeline_;  // kRoundRobin: writes, flushes, trims
  // independent_plane_reads: per die x plane, end of its last read; else empty.
  std::vector<TimeNs> plane_read_busy_;
  bool track_pe_shifts_;  // see SsdConfig::independent_plane_reads
  // TLC page types: per type (lower, middle, upper) host read and program
  // times; page_types_ false = every page takes page_read_ns/page_program_ns.
  bool page_types_;
  TimeNs page_read_ns_[3], page_program_ns_[3];
  std::uint32_t pages_per_block_all_planes_;  // global pages in one block
  Rng retry_rng_;                             // read retry draws only
  // SLC cache (slc_enabled_ false: none): program units in SLC, per die and
  // in total, not yet folded.
  bool slc_enabled_;
  std::uint64_t program_bytes_;  // one program unit (all planes)
  std::vector<std::uint32_t> slc_programs_on_die_;
  std::uint64_t slc_programs_ = 0;
  TimeNs submit_now_ = 0;  // `now` of the latest Submit
  // `now` of the Submit before it: no channel booking starts earlier (idle
  // GC and folds start after the last completion, which is after it).
  TimeNs channel_prune_ = 0;

  using Release = std::pair<TimeNs, std::uint32_t>;  // (done, host units)
  std::priority_queue<Release, std::vector<Release>, std::greater<>> buffer_releases_;
  std::uint64_t buffer_capacity_units_;
  std::uint64_t buffer_used_units_ = 0;
  TimeNs dispatch_time_ = 0;
  TimeNs call_program_done_ = 0;   // latest host program emitted in this call
  TimeNs last_program_done_ = 0;   // latest host program ever emitted
  TimeNs last_completion_ = 0;     // latest host command completion
  bool gc_background_due_ = true;  // some die may be below the background mark

  struct Counters {
    std::uint64_t reads = 0, writes = 0, flushes = 0, trims = 0;
    std::uint64_t host_bytes_read = 0, host_bytes_written = 0;
    std::uint64_t nand_pages_read = 0, write_buffer_hits = 0, unmapped_reads = 0;
    std::uint64_t write_buffer_stall_ns = 0, admission_wait_ns = 0;
    std::uint64_t gc_background_runs = 0, suspends = 0, suspends_refused = 0;
    std::uint64_t read_admission_wait_ns = 0;
    std::uint64_t gc_pages_read = 0;
    std::uint64_t slc_bytes_written = 0, slc_bytes_folded = 0, slc_bypass_bytes = 0;
    std::uint64_t read_retry_rounds = 0, reads_retried = 0;
  } n_;
};

}  // namespace devmodel::internal

#endif  // DEVMODEL_SRC_SSD_MODEL_H_
