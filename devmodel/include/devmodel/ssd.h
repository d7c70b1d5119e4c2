// NAND SSD timing model: channels x dies x planes geometry, a busy-until
// timeline per die and per channel, a DRAM write buffer, and a page-level FTL
// with greedy garbage collection, TRIM and optional program/erase suspend;
// optionally (each off by default) separate read and write pipelines with
// round-robin arbitration over submission queues, a bounded number of
// suspends per program/erase with a resume cost, independent plane reads, an
// SLC write cache folded into TLC when idle, TLC page types with read-retry
// tails, and GC that yields to reads between page moves.
// Why: queueing inside the drive (die conflicts, GC stalls, buffer drain) is
// what shapes the read tails that block-layer schedulers react to.
// Thread-safety: see Device (not thread-safe; callers serialize).
#ifndef DEVMODEL_SSD_H_
#define DEVMODEL_SSD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "devmodel/device.h"

namespace devmodel {

enum class Precondition : std::uint8_t {
  kNone = 0,  // factory-fresh: nothing mapped, all blocks free
  kFull = 1,  // every exported unit written once, sequentially
  // kFull, then precondition_overwrite_factor x capacity uniformly random
  // overwrites (steady-state GC), built directly: the block-level GC runs on
  // valid counts only, then units are laid out (64 GiB in about 1 s, 1 TiB in
  // about 15 s on a 2-core VM). Exact in distribution for valid counts per
  // block, victim order and free blocks, so random I/O and WAF match a
  // replay. Approximated: which LPNs share a block is a seeded random
  // permutation, while a replay keeps never-overwritten units in fill order
  // (GC moves preserve it): sequential 128 KiB reads right after
  // preconditioning were 15% slower than after a replay at factor 0.5, 4.5%
  // at 1, equal at 4. See Ftl::BuildSteadyState.
  kSteady = 2,
  // The same overwrites replayed one by one on the mapping tables: exact,
  // including fill order, but several times slower (64 GiB in about 4 s).
  // C++ only (profiles offer "none", "full", "steady"); validates kSteady.
  kSteadySimulated = 3,
};

// How commands enter the drive's internal pipeline.
enum class Arbitration : std::uint8_t {
  // One admission FIFO for every command, max_inflight_commands deep: a read
  // behind a queue of writes waits for their slots (and, through them, for
  // write-buffer space).
  kFifo = 0,
  // NVMe round robin arbitration over submission queues (NVMe base spec,
  // "Round Robin Arbitration") in front of separate read and write pipelines:
  // reads (max_inflight_reads slots) never wait for a write's slot or for
  // write-buffer space; writes, flushes and trims share max_inflight_writes.
  // In each pipeline a submission queue holds at most max_inflight_per_queue
  // slots, so a queue with a backlog leaves slots free for the next command
  // of another queue (the slot-level effect of taking one command per queue
  // in turn; deadlines already given are never revised). Queue ids equal
  // modulo kSsdArbitratedQueues share one per-queue limit.
  kRoundRobin = 1,
};

inline constexpr std::uint32_t kSsdArbitratedQueues = 1024;

// Defaults describe a small generic TLC drive; profiles set every figure.
struct SsdConfig {
  // --- geometry ---
  std::uint32_t channels = 4;
  std::uint32_t dies_per_channel = 2;
  std::uint32_t planes_per_die = 2;  // one program covers all planes
  std::uint32_t blocks_per_plane = 256;
  std::uint32_t pages_per_block = 256;
  std::uint32_t page_bytes = 16384;
  std::uint32_t mapping_unit_bytes = 4096;  // FTL granularity; divides page_bytes
  std::uint32_t logical_block_bytes = 512;
  // Exported (user-visible) capacity; raw capacity minus this is
  // over-provisioning. 0 means 7% below raw, rounded down to a mapping unit.
  std::uint64_t capacity_bytes = 0;

  // --- timing (ns, MB/s with 1 MB = 1e6 bytes) ---
  std::uint64_t page_read_ns = 50000;      // tR
  std::uint64_t page_program_ns = 500000;  // tPROG (one multi-plane program)
  std::uint64_t block_erase_ns = 3500000;  // tBERS
  std::uint32_t channel_mb_s = 800;        // NAND bus, per channel
  // PCIe, per direction; 0 = not modelled. Read data crosses it in the order
  // it is ready, so a read's deadline is final only when polled (Poll).
  std::uint32_t host_link_mb_s = 3500;
  std::uint64_t controller_overhead_ns = 5000;  // per command, before media work
  std::uint32_t max_inflight_commands = 128;    // internal concurrency limit (kFifo)

  // --- arbitration (see Arbitration) ---
  Arbitration arbitration = Arbitration::kFifo;
  // kRoundRobin only (must be 0 with kFifo). Commands; 0 = max_inflight_commands.
  std::uint32_t max_inflight_reads = 0;
  std::uint32_t max_inflight_writes = 0;  // writes, flushes and trims
  // kRoundRobin only. Commands per submission queue in each pipeline; 0 = no
  // per-queue limit.
  std::uint32_t max_inflight_per_queue = 0;

  // --- write buffer ---
  // Host writes complete once in the buffer; 0 = write-through (a write
  // completes when its data is programmed).
  std::uint64_t write_buffer_bytes = 4u << 20;
  // With PLP a FLUSH costs only controller overhead; without it, a FLUSH waits
  // until every buffered write is programmed.
  bool power_loss_protection = false;

  // --- garbage collection (free blocks counted per die) ---
  std::uint32_t gc_foreground_free_blocks = 2;  // >= 2; writes stall for GC
  std::uint32_t gc_background_free_blocks = 8;  // GC while idle below this
  std::uint64_t gc_idle_delay_ns = 1000000;     // idle time before background GC

  // --- suspend: reads preempt programs/erases on their die ---
  bool suspend_enabled = false;
  // A read that meets a program or erase in progress waits this long before
  // sensing, and the operation ends later by this plus the read's die time
  // plus resume_latency_ns. With resume_latency_ns = 0 this is the whole
  // suspend + resume cost.
  std::uint64_t suspend_latency_ns = 20000;
  // Resuming a suspended operation after the read; the read does not wait
  // for it, the operation (and work booked after it) does. 0 = free.
  std::uint64_t resume_latency_ns = 0;
  // Suspends one program/erase accepts; a read meeting it after that waits
  // for it to finish (counted as suspends_refused). 0 = unlimited.
  std::uint32_t max_suspends_per_op = 0;

  // --- plane-level read parallelism ---
  // false: a die senses one page at a time (all planes together). true: each
  // plane of a die senses its own pages independently (independent
  // multi-plane read), the planes sharing the die's channel for transfers;
  // programs and erases still occupy every plane of the die.
  bool independent_plane_reads = false;
  // With resume_latency_ns, max_suspends_per_op, independent_plane_reads or
  // gc_yield set, a read that delays booked program/erase work moves that work's
  // booked times too, so a later read sees a suspended operation still
  // running and waits for its true end. With all four at their defaults the
  // booked times stay where they were first put (the model before these
  // mechanisms; every deadline unchanged).

  // --- SLC write cache (Samsung TurboWrite / Intelligent TurboWrite) ---
  // Host program units go to SLC (slc_program_ns) while the cache has room,
  // else straight to TLC (the page_program times). Room = slc_static_bytes +
  // min(slc_dynamic_max_bytes, free bytes / slc_dynamic_free_ratio), where
  // free bytes = exported capacity - bytes the host has mapped: the dynamic
  // part borrows free TLC blocks in SLC mode (a TLC cell holds 3 bits, SLC 1,
  // hence the default ratio 3), so it shrinks as the drive fills. Both sizes
  // 0 (the default) = no SLC cache. Simplification: SLC is modelled in time
  // and space, not in the mapping (a unit keeps its FTL location; reads of
  // it take TLC read times wherever it is).
  std::uint64_t slc_static_bytes = 0;
  std::uint64_t slc_dynamic_max_bytes = 0;
  std::uint32_t slc_dynamic_free_ratio = 3;  // free bytes per byte of dynamic SLC
  std::uint64_t slc_program_ns = 0;          // one multi-plane SLC program; < TLC
  // After this much idle time (no command, as background GC) SLC data is
  // folded into TLC, one program unit per step on the die that holds it:
  // page_read_ns, the unit over the channel and back, then a TLC program.
  // Fold steps occupy the die as programs do (reads wait or suspend).
  std::uint64_t slc_fold_idle_ns = 1000000;

  // --- TLC page types ---
  // A page's type is its index in its block (the program unit's index: all
  // planes program the same page index) modulo 3: 0 lower, 1 middle, 2 upper.
  // Host reads take page_read_<type>_ns, host programs page_program_<type>_ns;
  // 0 = page_read_ns / page_program_ns (the default: one time for every
  // page). GC and fold reads take page_read_ns.
  std::uint64_t page_read_lower_ns = 0;
  std::uint64_t page_read_middle_ns = 0;
  std::uint64_t page_read_upper_ns = 0;
  std::uint64_t page_program_lower_ns = 0;
  std::uint64_t page_program_middle_ns = 0;
  std::uint64_t page_program_upper_ns = 0;
  // Read retry: after a host page read's sensing, with this probability it
  // needs another sensing round (read_retry_ns of die time), and again with
  // the same probability after each round, up to read_retry_max_rounds
  // rounds (so probability 1 = always the maximum). Drawn from the model's
  // seeded generator. 0 = never (the default).
  double read_retry_probability = 0;
  std::uint64_t read_retry_ns = 0;
  std::uint32_t read_retry_max_rounds = 0;  // >= 1 when the probability > 0

  // --- GC granularity ---
  // false: a GC program unit's page reads, transfers and program are booked
  // as one operation on the die, so a read meeting it waits for all of it
  // (or suspends it). true: each page move (page read + its transfer) and
  // the program are separate operations; a read waits for (or suspends) at
  // most the one in progress, and overtakes those not started.
  bool gc_yield = false;
  // false: background GC, once due after gc_idle_delay_ns of idle time, books
  // whole victim blocks from the idle point on, so a command arriving during
  // them waits for every move still booked. true: it is preemptible (semi-
  // preemptible GC, Lee et al., ISPASS 2011): it books one GC program unit
  // (its page reads and program) or one erase at a time, and only steps that
  // start before the command that ends the idle time; the victim in progress
  // is resumed in the next idle time. A host program then waits at most for
  // the step in progress on its die. Foreground GC (below
  // gc_foreground_free_blocks) and GC paced by host programs are unchanged.
  bool gc_background_preemptible = false;

  Precondition precondition = Precondition::kNone;
  double precondition_overwrite_factor = 1.0;  // kSteady*: overwrites / capacity
};

// Most erase blocks (channels x dies_per_channel x blocks_per_plane) a drive
// may have: the FTL keeps about 20 bytes of metadata per block (80 MiB here),
// whatever was written. An 8 TB drive with 4 MiB blocks has 2M.
inline constexpr std::uint64_t kMaxSsdBlocks = std::uint64_t{1} << 22;

// Returns nullptr and sets *error if `config` is inconsistent (names the
// profile key, e.g. "ssd.capacity_bytes", and the allowed range). `seed`
// drives preconditioning's random overwrites.
std::unique_ptr<Device> NewSsd(const SsdConfig& config, std::uint64_t seed, std::string* error);

// Where a drive preconditioned "steady" keeps its built state between starts
// (a file per configuration and seed, src/state_cache.h): loaded instead of
// replayed when a valid file is there, else replayed and saved. The loaded
// drive gives the same completions and counters as the replayed one.
struct SsdStateCache {
  std::string dir;          // empty: replay at every start
  std::string config_text;  // every key of the drive's configuration, canonical
                            // (the profile loader's [ssd] section); empty: no cache
};

// NewSsd with a state cache.
std::unique_ptr<Device> NewSsd(const SsdConfig& config, std::uint64_t seed,
                               const SsdStateCache& cache, std::string* error);

// The checks of NewSsd without building the drive's state (no mapping tables,
// no preconditioning): cheap for any size. On success sets *capacity_bytes
// (may be null) to the exported capacity NewSsd would give.
bool CheckSsdConfig(const SsdConfig& config, std::uint64_t* capacity_bytes, std::string* error);

// Raw capacity implied by the geometry, in bytes.
std::uint64_t SsdRawBytes(const SsdConfig& config);

}  // namespace devmodel

#endif  // DEVMODEL_SSD_H_
