// Trace replay (fio's read_iolog): loads a recorded I/O sequence and turns it
// into a schedule of I/Os, each due at a time since the replay's start.
// Sources, told apart by their first bytes:
// - fio iolog version 2 ("fio version 2 iolog"; no timestamps, `wait`
//   lines add delays in us) and version 3 ("fio version 3 iolog"; every
//   line starts with a timestamp in us since the recording began);
// - blktrace binary: blktrace's per-CPU files (`<dev>.blktrace.<cpu>`; one
//   of them names them all, and all are merged by time) or one
//   `blkparse -d` dump. Records are struct blk_io_trace (48 bytes, then
//   pdu_len bytes), magic 0x65617400 | version 7, in the byte order of the
//   machine that recorded them; a file recorded big-endian is byte-swapped
//   (as fio does) and a note says so. Only queue (Q) events are replayed,
//   as fio: discards as trims, anything with the flush bit as an fsync,
//   the rest as reads or writes; zero-byte data events are skipped.
// The mapping follows fio 3.x: offsets are divided by replay_scale, then
// aligned down to replay_align (blktrace lengths are rounded up to it);
// times are scaled by 100 / replay_time_scale (not `wait`s, as fio), and
// replay_no_stall makes every I/O due at once. The origin is the first line
// (iolog v3) or the first queue event (blktrace). Unlike fio, which sleeps
// each delay after the previous issue (so lateness accumulates), an I/O is
// due at a fixed time from the start.
// Errors name the file and the byte offset (and line, for iologs).
// Thread-safety: pure functions; a loaded trace is immutable.
#ifndef BLKGEN_REPLAY_H_
#define BLKGEN_REPLAY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine.h"
#include "job_spec.h"
#include "status.h"

namespace blkgen {

struct ReplayIo {
  uint64_t due_ns = 0;  // since the replay's start, after time scaling
  uint64_t offset = 0;  // bytes, after replay_scale and replay_align
  uint32_t length = 0;  // bytes; 0 for syncs
  IoOp op = IoOp::kRead;
};

// How recorded I/Os map onto the replay (fio's option names).
struct ReplaySettings {
  uint32_t time_scale = 100;  // replay_time_scale, %: 200 = twice as fast
  bool no_stall = false;      // replay_no_stall: ignore the recorded times
  uint64_t align = 0;         // replay_align, bytes (power of two); 0 = none
  uint64_t scale = 0;         // replay_scale: offsets divided by it; 0/1 = none
};

struct ReplayTrace {
  std::string format;  // "fio iolog v2", "fio iolog v3", "blktrace", "blktrace (N per-CPU files)"
  std::vector<ReplayIo> ios;  // in issue order
  uint8_t dirs = 0;           // DirBit() of the data directions present
  uint32_t max_length = 0;    // bytes
  uint64_t end_offset = 0;    // the largest offset + length, bytes
  bool big_endian = false;    // a blktrace recorded on a big-endian machine
};

// Reads a whole file into *bytes; on failure a Status naming it.
using ReplayFileReader = std::function<Status(const std::string& path, std::string* bytes)>;
// Lists the names in a directory (for per-CPU blktrace files).
using ReplayDirLister =
    std::function<Status(const std::string& dir, std::vector<std::string>* names)>;

// Parses one iolog (v2 or v3) named `name` (for messages).
Status ParseIolog(const std::string& name, std::string_view text, const ReplaySettings& settings,
                  ReplayTrace* out);

// Parses blktrace files (each a per-CPU file or a dump) and merges their
// queue events by time (ties: file order, then record order).
Status ParseBlktrace(const std::vector<std::pair<std::string, std::string>>& files,
                     const ReplaySettings& settings, ReplayTrace* out);

// True if `bytes` start with a blktrace record of either byte order.
bool LooksLikeBlktrace(std::string_view bytes);

// Loads `path`: an iolog, a blktrace dump, or one per-CPU blktrace file
// (`<dev>.blktrace.<n>`), in which case every `<dev>.blktrace.<k>` beside
// it is merged in.
Status LoadReplayTrace(const std::string& path, const ReplaySettings& settings,
                       const ReplayFileReader& read, const ReplayDirLister& list,
                       ReplayTrace* out);

// Loads the trace of every job with read_iolog (real files), sets its
// directions from the trace, and checks what replay cannot combine with.
// Errors are Status::Usage naming the job. Notes go to *notes.
Status LoadReplays(std::vector<JobSpec>* jobs, std::vector<std::string>* notes);

// Option parsers for the option table (options.cc).
Status ApplyReadIolog(std::string_view v, JobSpec* job);
Status ApplyReplayTimeScale(std::string_view v, JobSpec* job);
Status ApplyReplayNoStall(std::string_view v, JobSpec* job);
Status ApplyReplayRedirect(std::string_view v, JobSpec* job);
Status ApplyReplayAlign(std::string_view v, JobSpec* job);
Status ApplyReplayScale(std::string_view v, JobSpec* job);

}  // namespace blkgen

#endif  // BLKGEN_REPLAY_H_
