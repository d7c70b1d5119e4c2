/*
 * devmodel.h - the C ABI of libdevmodel, the only header QEMU includes.
 *
 * A devmodel_t is one simulated drive (SSD, HDD, cloud volume or zero-latency
 * device) built from a TOML profile. The caller submits each guest request
 * with the current virtual time and gets back the time at which to complete
 * it; the model never reads a clock and every random choice comes from the
 * seed, so the same request stream gives the same deadlines, always.
 *
 * Rules (as in LevelDB's c.h):
 *  - Opaque handles; create with devmodel_open, destroy with devmodel_close.
 *  - Every pointer argument must be non-NULL unless stated otherwise.
 *  - Errors: functions that can fail take `char** errptr` as their last
 *    argument. On entry *errptr must be NULL or a string from this library; on
 *    failure it is replaced (the old one freed) by a malloc'd message that the
 *    caller frees with devmodel_free. On success *errptr is left untouched.
 *  - No C++ exception crosses this interface; nothing a guest can send aborts.
 *  - Strings returned by this library are malloc'd; free with devmodel_free.
 *  - Thread-safety: a devmodel_t is not thread-safe. All calls on one handle
 *    must be serialized by the caller (QEMU: under the big QEMU lock, from the
 *    vCPU thread or a QEMU_CLOCK_VIRTUAL timer). Distinct handles share no
 *    state and may be used from different threads.
 *  - Time: `now_ns` is QEMU_CLOCK_VIRTUAL in ns and must not decrease from one
 *    call to the next on a handle; a smaller value is treated as the largest
 *    seen so far. Deadlines are exact while now_ns < 2^53 (104 days); past
 *    that they remain >= now_ns (a guest that warps the clock gets no crash).
 *
 * Completion protocol:
 *    devmodel_submit(m, &req, now, &c, &err);
 *    arm a timer at c.deadline_ns;
 *    when it fires: if (!c.final) devmodel_poll(m, req.tag, now, &c, &err)
 *                   and re-arm at c.deadline_ns; else complete the request.
 *  A front end that reports errors uses devmodel_submit_result and
 *  devmodel_poll_result instead: the same protocol, and a final result
 *  carries the status the request ends with (DEVMODEL_STATUS_*; a profile's
 *  media_error fault fails reads of an LBA range). devmodel_submit and
 *  devmodel_poll drop the status: every request then succeeds.
 *  A final result with DEVMODEL_STATUS_LOST (a profile's timeout fault) is
 *  never completed by the device: the caller arms no timer and holds the
 *  request until the host takes it back (an Abort, a queue deletion, a
 *  controller reset), then calls devmodel_cancel once.
 *  A profile's reset fault fails the whole device at a time: from then on
 *  every request whose final deadline falls at or after it is LOST too,
 *  until the host resets the device (devmodel_host_reset). The front end
 *  shows the failure in its protocol while devmodel_failed says so (NVMe:
 *  CSTS.CFS), so the host's recovery can find it.
 *  Deadlines are final for zero profiles, SSD profiles with host_link_mb_s =
 *  0 and HDD profiles with queue_policy = "fifo" (a cloud profile as its
 *  backing device). An HDD with "sptf" decides which queued command runs
 *  next only when the mechanism frees, and an SSD's link carries read data
 *  in the order it is ready, so their deadlines may start as "poll again at"
 *  times. A final deadline is never earlier than now_ns.
 */
#ifndef DEVMODEL_DEVMODEL_H_
#define DEVMODEL_DEVMODEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct devmodel_t devmodel_t;

enum {
  DEVMODEL_OP_READ = 0,
  DEVMODEL_OP_WRITE = 1,
  DEVMODEL_OP_FLUSH = 2,
  DEVMODEL_OP_TRIM = 3 /* NVMe deallocate / ATA DSM TRIM */
};

typedef struct devmodel_request {
  uint32_t op;           /* DEVMODEL_OP_* */
  uint32_t queue_id;     /* NVMe SQ id or AHCI port; SSD arbitration */
  uint64_t offset_bytes; /* multiple of the logical block size */
  uint64_t length_bytes; /* multiple of the logical block size; 0 for flush */
  /* Unique among this handle's requests whose completion is not yet final;
   * passed back to devmodel_poll. A pointer to the device's request works. */
  uint64_t tag;
} devmodel_request;

typedef struct devmodel_completion {
  uint64_t deadline_ns; /* absolute QEMU_CLOCK_VIRTUAL time */
  int final;            /* 1: complete at deadline_ns; 0: poll at deadline_ns */
} devmodel_completion;

enum {
  DEVMODEL_STATUS_OK = 0,
  /* Unrecovered media error: NVMe SCT 2h / SC 81h (Unrecovered Read Error)
   * on a read, SC 80h (Write Fault) on a write; ATA ERR with UNC. */
  DEVMODEL_STATUS_MEDIA_ERROR = 1,
  /* The device never completes it (a timeout fault): deadline_ns is when it
   * would have; the model's state is as if it did. The host's own timeout
   * has to take it back (devmodel_cancel). */
  DEVMODEL_STATUS_LOST = 2
};

typedef struct devmodel_result {
  uint64_t deadline_ns; /* absolute QEMU_CLOCK_VIRTUAL time */
  int32_t final;        /* 1: complete at deadline_ns; 0: poll at deadline_ns */
  uint32_t status;      /* DEVMODEL_STATUS_*, once final (else OK) */
} devmodel_result;

/* Library version, e.g. "0.1.0". Static storage; do not free. */
const char* devmodel_version(void);

/* Builds the device described by the TOML profile at `profile_path`. `seed`
 * drives every random choice. Returns NULL and sets *errptr on failure (the
 * message names the file, line, key and allowed range). */
devmodel_t* devmodel_open(const char* profile_path, uint64_t seed, char** errptr);

/* devmodel_open, keeping the built state of an SSD preconditioned "steady"
 * in `state_cache_dir` (NULL or "": none, as devmodel_open): loaded from
 * its file there when one matches the profile's [ssd] section, the seed and
 * this library's sources exactly, else built by replay and saved (created
 * if missing). Same completions and counters either way. A file that does
 * not match or is damaged is rebuilt, with a note on stderr; a directory
 * that cannot be written costs only the saving (a note too). */
devmodel_t* devmodel_open_cached(const char* profile_path, uint64_t seed,
                                 const char* state_cache_dir, char** errptr);

/* Saves the whole state of `model` at `now_ns` to the file `state_path`
 * (written to a temporary name beside it, then renamed), so that a later
 * devmodel_open_state starts from the drive this run left (a database
 * loaded once, used by many runs). What the state holds per model, and why
 * it is exact, is in the library's src/model_state.h. Refused, with
 * nothing written, while a request is held (a completion not final, a
 * final deadline after now_ns, a lost request not cancelled), and while a
 * slow fault lowers a cloud volume's rate limit. The fault schedule's
 * bookkeeping (origin, request numbers, resets) is not saved. The file
 * (format version 1) records this library's version and source hash, the
 * profile's identity (a hash of its text, its model, capacity and logical
 * block size), the seed and the save instant. Returns 1, or 0 with
 * *errptr set. */
int devmodel_save_state(devmodel_t* model, uint64_t now_ns, const char* state_path,
                        char** errptr);

/* Opens the profile at `profile_path` with the state in `state_path` that
 * devmodel_save_state wrote at its save instant T: the drive as it was
 * then, seen from caller time `now_ns` on. Caller time t is the saving
 * model's T + (t - now_ns), so background work and idle timers go on as if
 * the caller's clock had continued from T (an HDD's platter too). The
 * seed is the saving model's (its random streams are in the state). A file
 * of another format version, damaged or truncated, saved by another build
 * of this library or for another profile text is refused with a message
 * naming what differs; NULL and *errptr set. */
devmodel_t* devmodel_open_state(const char* profile_path, const char* state_path,
                                uint64_t now_ns, char** errptr);

/* Destroys `model`. NULL is allowed and ignored. */
void devmodel_close(devmodel_t* model);

/* Exported capacity in bytes (what the guest sees). */
uint64_t devmodel_capacity_bytes(const devmodel_t* model);

/* Logical block size in bytes: 512 or 4096. */
uint32_t devmodel_logical_block_bytes(const devmodel_t* model);

/* ATA IDENTIFY word 217 (ide-hd `rotation_rate`): 1 = non-rotating medium,
 * otherwise the nominal rotation rate in revolutions per minute. */
uint32_t devmodel_rotation_rate(const devmodel_t* model);

/* 1 if every completion from devmodel_submit is final (no polling needed). */
int devmodel_deadlines_final(const devmodel_t* model);

/* Sets the origin of the profile's fault schedule (its top-level [[fault]]
 * tables: stall, slow, media_error, timeout and reset, at_ms after the origin; see
 * devmodel/faults.h) to `now_ns`. blklab sets it when the guest's workload
 * starts. Before the first call no fault applies; a later call moves every
 * window. A profile without faults ignores it (the counters still show it as
 * "fault_origin_ns"). Cannot fail. */
void devmodel_set_origin(devmodel_t* model, uint64_t now_ns);

/* Submits `request` at `now_ns` and writes its completion to *out. On an
 * invalid request (out of range, misaligned, unknown op, a read or write
 * longer than 1 GiB) sets *errptr and writes {now_ns, 1} so the caller can
 * complete it with an error status. */
void devmodel_submit(devmodel_t* model, const devmodel_request* request, uint64_t now_ns,
                     devmodel_completion* out, char** errptr);

/* For a request whose completion was not final: REQUIRES now_ns >= the
 * deadline last returned for it. Writes the final deadline or the next poll
 * time to *out. An unknown tag yields {now_ns, 1}. */
void devmodel_poll(devmodel_t* model, uint64_t tag, uint64_t now_ns, devmodel_completion* out,
                   char** errptr);

/* devmodel_submit and devmodel_poll with the status of a final result.
 * A rejected request (as above) gives {now_ns, 1, DEVMODEL_STATUS_OK}. */
void devmodel_submit_result(devmodel_t* model, const devmodel_request* request, uint64_t now_ns,
                            devmodel_result* out, char** errptr);
void devmodel_poll_result(devmodel_t* model, uint64_t tag, uint64_t now_ns, devmodel_result* out,
                          char** errptr);

/* The host took request `tag` back (a queue deletion or a controller reset
 * after its timeout) before the device completed it: a lost request
 * (DEVMODEL_STATUS_LOST) or one whose completion is not final yet. Counted
 * in "cancelled"; a tag with no such request (its final deadline given and
 * not lost, or cancelled already) is ignored, so a request counts once. The
 * model's state stays as if the device did the work. Cannot fail. */
void devmodel_cancel(devmodel_t* model, uint64_t tag, uint64_t now_ns);

/* 1 while a reset fault holds the device failed at `now_ns` (it started at
 * or before now_ns and no devmodel_host_reset since), else 0. A front end
 * asks it when the host reads the register that would show the failure
 * (NVMe: CSTS.CFS). Changes nothing; cannot fail. */
int devmodel_failed(const devmodel_t* model, uint64_t now_ns);

/* The host reset the device at `now_ns` (NVMe: CC.EN cleared): a reset
 * fault in effect ends, and requests submitted from now on complete.
 * Counted in "host_resets" whether or not a fault was in effect, once the
 * fault origin is set (earlier resets are the machine's own). The caller
 * cancels what the device still held (devmodel_cancel), before or after.
 * Cannot fail. */
void devmodel_host_reset(devmodel_t* model, uint64_t now_ns);

/* Counters as a JSON object (malloc'd; free with devmodel_free), e.g.
 * {"model":"ssd","host_bytes_written":...,"nand_bytes_written":...,"waf":...},
 * with "fault_origin_ns" (null until set), "host_resets" (devmodel_host_reset
 * calls since the origin) and "faults": per [[fault]] of the profile, {"kind","at_ns",
 * "duration_ns","start_ns","end_ns" (absolute; null until the origin is set;
 * end and duration null for a media error that lasts to the end, and for a
 * reset until the host's reset ends it),"factor" (slow only),"lba_start",
 * "lba_count","retry_ns","writes" (media_error and timeout),"requests"
 * (moved, failed or lost by it)}, and
 * "media_errors": {"read","write"}, requests that ended with
 * DEVMODEL_STATUS_MEDIA_ERROR; "lost": {"read","write"}, requests that
 * ended with DEVMODEL_STATUS_LOST (no service time: service_ns leaves them
 * out); "cancelled", requests devmodel_cancel took back; "lost_held", lost
 * requests not cancelled yet.
 * Returns NULL and sets *errptr on failure (out of memory). */
char* devmodel_counters_json(const devmodel_t* model, char** errptr);

/* Frees a string returned by this library. NULL is allowed. */
void devmodel_free(void* ptr);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DEVMODEL_DEVMODEL_H_ */
