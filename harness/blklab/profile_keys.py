"""What each device-model profile key means, for the generated reference
(docs/reference/profile-keys.md, `blklab reference`).

Types, defaults, ranges and units are not written here: the reference
takes them from libdevmodel's own key table (`devmodel-check --keys` and
`--key-defaults`, devmodel/src/profile.cc). This table adds one line of
meaning per key, said after the config structs' comments in
devmodel/include/devmodel/ (ssd.h, hdd.h, cloud.h, zero.h, faults.h),
which stay the fuller account.

A key is "section.key"; the section "fault" is the [[fault]] array.
harness/tests/test_reference.py fails when the library lists a key that is
not here, or this names a key the library does not list.
"""

from __future__ import annotations

MEANINGS: dict[str, str] = {
    # [device]
    "device.model": "which timing model the profile describes; its keys are in the section of "
                    "that name",
    "device.name": "a name for the profile, for its readers; the model does not use it",
    # [ssd]: geometry
    "ssd.channels": "NAND channels (buses) between the controller and the dies",
    "ssd.dies_per_channel": "flash dies on each channel; a die does one operation at a time",
    "ssd.planes_per_die": "planes per die; one program covers every plane of its die",
    "ssd.blocks_per_plane": "erase blocks per plane",
    "ssd.pages_per_block": "pages per erase block",
    "ssd.page_bytes": "bytes per flash page",
    "ssd.mapping_unit_bytes": "the FTL's mapping granularity; divides page_bytes",
    "ssd.logical_block_bytes": "the logical block size the drive reports to the host",
    "ssd.capacity_bytes": "the exported (user-visible) capacity; raw capacity minus this is "
                          "over-provisioning",
    # [ssd]: timing
    "ssd.page_read_us": "tR: sensing one page on a die",
    "ssd.page_program_us": "tPROG: one multi-plane program",
    "ssd.block_erase_ms": "tBERS: erasing one block",
    "ssd.channel_mb_s": "the NAND bus's rate, per channel",
    "ssd.host_link_mb_s": "the host link (PCIe) rate per direction; read data crosses it in the "
                          "order it is ready",
    "ssd.controller_overhead_us": "the controller's time per command, before any media work",
    "ssd.max_inflight_commands": "commands the drive works on at once (its internal concurrency "
                                 "limit)",
    "ssd.arbitration": "how commands enter the pipeline: fifo (one admission queue) or "
                       "round_robin (NVMe round robin over submission queues, reads and writes "
                       "in separate pipelines)",
    "ssd.max_inflight_reads": "read slots of the read pipeline",
    "ssd.max_inflight_writes": "slots for writes, flushes and trims in the write pipeline",
    "ssd.max_inflight_per_queue": "slots one submission queue may hold in each pipeline",
    # [ssd]: write buffer and garbage collection
    "ssd.write_buffer_bytes": "DRAM write buffer: a host write completes once in it; 0 = "
                              "write-through",
    "ssd.power_loss_protection": "with it a FLUSH costs only controller overhead; without it a "
                                 "FLUSH waits until every buffered write is programmed",
    "ssd.gc_foreground_free_blocks": "free blocks per die below which writes stall for garbage "
                                     "collection",
    "ssd.gc_background_free_blocks": "free blocks per die below which garbage collection runs "
                                     "while the drive is idle",
    "ssd.gc_idle_delay_ms": "idle time before background garbage collection starts",
    "ssd.suspend": "a read may suspend a program or erase in progress on its die",
    "ssd.suspend_latency_us": "what a read that suspends a program or erase waits before sensing; "
                              "the operation ends later by this and the read's die time",
    "ssd.resume_latency_us": "resuming a suspended operation after the read: the operation waits "
                             "for it, the read does not",
    "ssd.max_suspends_per_op": "suspends one program or erase accepts; a read meeting it after "
                               "that waits for it to finish",
    "ssd.independent_plane_reads": "each plane of a die senses its own pages independently "
                                   "(sharing the die's channel); otherwise a die senses one page "
                                   "at a time",
    # [ssd]: SLC cache
    "ssd.slc_static_bytes": "a fixed SLC write cache",
    "ssd.slc_dynamic_max_bytes": "the largest dynamic SLC cache, borrowed from free TLC blocks "
                                 "(it shrinks as the drive fills)",
    "ssd.slc_dynamic_free_ratio": "free bytes that give one byte of dynamic SLC (3 for TLC: a "
                                  "TLC cell holds 3 bits, SLC 1)",
    "ssd.slc_program_us": "one multi-plane SLC program",
    "ssd.slc_fold_idle_ms": "idle time after which SLC data is folded into TLC",
    # [ssd]: TLC page types and read retry
    "ssd.page_read_lower_us": "a host read of a lower page (page index in its block mod 3 = 0)",
    "ssd.page_read_middle_us": "a host read of a middle page (index mod 3 = 1)",
    "ssd.page_read_upper_us": "a host read of an upper page (index mod 3 = 2)",
    "ssd.page_program_lower_us": "a host program of a lower page",
    "ssd.page_program_middle_us": "a host program of a middle page",
    "ssd.page_program_upper_us": "a host program of an upper page",
    "ssd.read_retry_probability": "the chance that a host page read needs another sensing "
                                  "round, drawn again after each round (seeded)",
    "ssd.read_retry_us": "die time of one read-retry round",
    "ssd.read_retry_max_rounds": "the most read-retry rounds one page read takes",
    "ssd.gc_yield": "garbage collection books each page move and the program as separate "
                    "operations, so a read waits for (or suspends) only the one in progress",
    "ssd.gc_background_preemptible": "idle-time garbage collection is booked a program unit "
                                     "or an erase at a time and stops when a command arrives, "
                                     "so a host program waits only for the step in progress",
    # [ssd]: state at the start
    "ssd.precondition": "the drive's state at the start: none (factory-fresh), full (every "
                        "block written once, in order) or steady (full, then random overwrites: "
                        "steady-state garbage collection)",
    "ssd.precondition_overwrite_factor": "random overwrites of a steady precondition, as a "
                                         "multiple of the capacity",
    # [hdd]
    "hdd.capacity_bytes": "the exported capacity",
    "hdd.logical_block_bytes": "the logical block size the disk reports to the host",
    "hdd.rpm": "spindle speed",
    "hdd.heads": "recording surfaces",
    "hdd.zone_mb_s": "each zone's sustained media rate, outermost first; every zone has the same "
                     "number of cylinders",
    "hdd.track_to_track_seek_ms": "a seek of one cylinder",
    "hdd.average_seek_ms": "the mean seek over random pairs of blocks",
    "hdd.full_stroke_seek_ms": "a seek across every cylinder",
    "hdd.head_switch_ms": "switching to another head; also the track skew",
    "hdd.write_settle_ms": "extra time before a write that follows a seek",
    "hdd.command_overhead_us": "the disk's time per command, before any media work",
    "hdd.interface_mb_s": "the interface's payload rate (SATA 6 Gb/s: 600)",
    "hdd.cache_bytes": "the write-back cache's budget for dirty data",
    "hdd.read_ahead_bytes": "what the disk reads on after a read, into its cache",
    "hdd.cache_segments": "read-ahead segments the cache keeps",
    "hdd.write_cache": "writes complete from the cache (write-back); false = write-through",
    "hdd.flush_overhead_us": "a FLUSH CACHE on a clean cache",
    "hdd.queue_policy": "the order of queued commands (NCQ): fifo, or sptf (shortest positioning "
                        "time first)",
    "hdd.sptf_max_wait_ms": "under sptf, a command waiting this long goes first",
    # [zero]
    "zero.capacity_bytes": "the exported capacity",
    "zero.logical_block_bytes": "the logical block size the device reports to the host",
    "zero.latency_us": "a fixed time added to every request (0: completion at submission)",
    # [cloud]
    "cloud.backing": "the device model behind the volume's throttle and network ([ssd], [hdd] or "
                     "[zero] in the same profile)",
    "cloud.capacity_bytes": "the exported capacity; a gp2-style volume's IOPS baseline is "
                            "computed from it",
    "cloud.iops_per_gib": "gp2-style baseline IOPS per GiB of capacity, clamped to "
                          "iops_baseline_min..iops_baseline_max",
    "cloud.iops_baseline_min": "the gp2-style baseline's floor",
    "cloud.iops_baseline_max": "the gp2-style baseline's ceiling",
    "cloud.iops_cap": "a fixed IOPS cap (gp3-style), when iops_per_gib is 0",
    "cloud.iops_burst": "the rate while burst credits last (gp2-style)",
    "cloud.burst_credits": "the burst bucket's size; it starts full and refills at the baseline "
                           "rate",
    "cloud.throughput_mib_s": "the volume's bandwidth cap",
    "cloud.io_unit_bytes": "the accounting unit: a larger request counts as several I/Os",
    "cloud.latency_floor_us": "the network round trip's floor, added to every request",
    "cloud.latency_jitter_mean_us": "the mean of the exponential (seeded) part added to the floor",
    # [[fault]]
    "fault.kind": "stall (nothing completes in the window), slow (service times times factor), "
                  "media_error (requests to a block range fail), timeout (never completed: the "
                  "host's timeout takes them back) or reset (the device fails until the host "
                  "resets it)",
    "fault.at_ms": "when the fault starts, after the origin",
    "fault.after_requests": "the fault starts at the submission of request N + 1 after the origin",
    "fault.probability": "instead of a window: each request the fault could fail fails with this "
                         "chance, independently (seeded)",
    "fault.duration_ms": "the fault's window, from its start",
    "fault.factor": "slow: the service time multiplier (on a cloud volume, the rate limits are "
                    "divided by it)",
    "fault.lba_start": "the first logical block of the range a media_error or timeout fails",
    "fault.lba_count": "logical blocks in that range",
    "fault.retry_ms": "media_error: the drive's own retries before it reports the error, added to "
                      "the request's time",
    "fault.writes": "media_error and timeout fail writes too, not only reads",
}
