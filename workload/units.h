// Parsing of fio-style numbers with unit suffixes: sizes ("4k", "1g") and
// durations ("500ms", "2m"). The rules follow fio 3.33 (parse.c) so that fio
// command lines mean the same thing to blkgen, with one difference: a suffix
// fio would silently misread ("4kz", "10sec") is an error here.
// Thread-safety: pure functions.
#ifndef BLKGEN_UNITS_H_
#define BLKGEN_UNITS_H_

#include <cstdint>
#include <string_view>

#include "status.h"

namespace blkgen {

// Parses a byte count: decimal or 0x-hex digits, then an optional suffix,
// case-insensitive. As in fio with its default kb_base=1024:
//   k, kb = 2^10   m, mb = 2^20   g, gb = 2^30   t, tb = 2^40   p, pb = 2^50
//   kib = 10^3     mib = 10^6     gib = 10^9     tib = 10^12    pib = 10^15
// (fio's "compatibility mode": SI-looking suffixes are powers of two and the
// IEC ones powers of ten.) Percent values ("50%") are not supported yet.
// On error returns a usage Status naming the text; *bytes is unchanged.
Status ParseSize(std::string_view text, uint64_t* bytes);

// Parses a duration into nanoseconds. A plain number is in `default_unit_ns`
// (fio's runtime and ramp_time use seconds: 1000000000). Suffixes, as fio:
//   us, usec = 1 us   ms, msec = 1 ms   s = 1 s   m = 60 s   h = 3600 s
//   d = 86400 s
// On error returns a usage Status; *ns is unchanged.
Status ParseDuration(std::string_view text, uint64_t default_unit_ns, uint64_t* ns);

// Parses fio's boolean values "0" and "1".
Status ParseBool(std::string_view text, bool* value);

// Parses a non-negative decimal or 0x-hex integer without suffix.
Status ParseUint(std::string_view text, uint64_t* value);

// Parses a non-negative decimal number ("1.2", "99.95", "5"); no exponent,
// no sign, no suffix.
Status ParseDecimal(std::string_view text, double* value);

}  // namespace blkgen

#endif  // BLKGEN_UNITS_H_
