// Reading of fio job files: the ini format of fio's HOWTO ("Job file
// format"): `[section]` headers, `key=value` or bare `key` lines, whole-line
// comments starting with ';' or '#', blanks around keys and values ignored,
// and ${VAR} in a value replaced by the environment variable VAR (empty when
// unset, as fio). `[global]` sections are returned like any other; the caller
// gives them their meaning. fio's `include` directive and its $pagesize /
// $mb_memory / $ncpus keywords are refused with a message saying so.
// Thread-safety: pure functions.
#ifndef BLKGEN_JOB_FILE_H_
#define BLKGEN_JOB_FILE_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "job_spec.h"
#include "status.h"

namespace blkgen {

struct JobFileOption {
  GivenOption option;  // value absent for a bare `key`
  int line = 0;        // 1-based
};

struct JobFileSection {
  std::string name;  // "global" for [global]
  int line = 0;
  std::vector<JobFileOption> options;
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Parses the text of job file `path` (the path only names it in errors).
// Errors are usage errors naming "<path>:<line>".
Status ParseJobFile(const std::string& path, std::string_view text, const EnvLookup& env,
                    std::vector<JobFileSection>* sections);

}  // namespace blkgen

#endif  // BLKGEN_JOB_FILE_H_
