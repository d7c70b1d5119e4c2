// The job option table (options.cc) as JSON, so that tools outside blkgen
// (blklab's scenario checks) read blkgen's options from their one source
// instead of keeping a copy.
// Thread-safety: a pure function.
#ifndef BLKGEN_OPTION_TABLE_JSON_H_
#define BLKGEN_OPTION_TABLE_JSON_H_

#include <string>

namespace blkgen {

// {"blkgen_version": ..., "options": [{"name", "default", "help",
// "value_optional", "fio"}...], "not_supported_yet": [...]}; "fio" is false
// for blkgen's own options; "default" is null when the table has none.
std::string OptionTableJson();

}  // namespace blkgen

#endif  // BLKGEN_OPTION_TABLE_JSON_H_
