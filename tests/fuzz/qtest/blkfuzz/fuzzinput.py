"""A fuzz input: bytes read as a header and a list of fixed-size records.

    header   HEADER_BYTES bytes: the machine, device and profile choices
    records  RECORD_BYTES bytes each: one operation (first byte: which; the
             rest: its arguments), executed in order

Every record has the same size whatever its operation, so removing a record
leaves every other record's meaning (as bytes) unchanged: minimisation drops
records, and mutation can splice, duplicate and delete them. A short input is
padded with zeros; the same bytes always give the same operations.

Generation and mutation take a random.Random, so a seed names an input too.
"""

import random

HEADER_BYTES = 16
RECORD_BYTES = 24


class Input:
    def __init__(self, header, records):
        self.header = bytes(header[:HEADER_BYTES]).ljust(HEADER_BYTES, b"\0")
        self.records = [bytes(r[:RECORD_BYTES]).ljust(RECORD_BYTES, b"\0")
                        for r in records]

    @classmethod
    def from_bytes(cls, data):
        header = data[:HEADER_BYTES]
        body = data[HEADER_BYTES:]
        records = [body[i:i + RECORD_BYTES]
                   for i in range(0, len(body), RECORD_BYTES)]
        return cls(header, records)

    def to_bytes(self):
        return self.header + b"".join(self.records)

    def with_records(self, records):
        return Input(self.header, records)


class Args:
    """Reads typed values from a record's argument bytes, in order; past
    the end it reads zeros."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n):
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return int.from_bytes(chunk.ljust(n, b"\0"), "little")

    def u8(self):
        return self.take(1)

    def u16(self):
        return self.take(2)

    def u32(self):
        return self.take(4)

    def u64(self):
        return self.take(8)

    def pick(self, seq):
        return seq[self.u8() % len(seq)]

    def chance(self, numerator, denominator=256):
        """True with probability numerator/denominator (one byte)."""
        return self.u8() * denominator < numerator * 256


def weighted_table(weights):
    """A 256-entry table mapping an op byte to a name, each name getting a
    share of entries proportional to its weight (at least one)."""
    total = sum(weights.values())
    table = []
    for name, w in weights.items():
        table += [name] * max(1, round(256 * w / total))
    while len(table) < 256:
        table.append(table[len(table) % len(weights)])
    return table[:256]


def generate(rng, records):
    """A fresh input of `records` random records."""
    return Input(rng.randbytes(HEADER_BYTES),
                 [rng.randbytes(RECORD_BYTES) for _ in range(records)])


def mutate(rng, inp, corpus, max_records):
    """A variation of `inp`: a few byte flips, record insertions, deletions,
    duplications, a splice with another corpus input, or a new header."""
    header = bytearray(inp.header)
    records = list(inp.records)
    for _ in range(rng.randint(1, 6)):
        what = rng.randrange(9)
        if what == 0 or not records:
            pos = rng.randint(0, len(records))
            records[pos:pos] = [rng.randbytes(RECORD_BYTES)
                                for _ in range(rng.randint(1, 16))]
        elif what == 1:
            i = rng.randrange(len(records))
            r = bytearray(records[i])
            r[rng.randrange(RECORD_BYTES)] = rng.randrange(256)
            records[i] = bytes(r)
        elif what == 2:
            i = rng.randrange(len(records))
            r = bytearray(records[i])
            r[0] = rng.randrange(256)
            records[i] = bytes(r)
        elif what == 3:
            a = rng.randrange(len(records))
            b = min(len(records), a + rng.randint(1, 32))
            del records[a:b]
        elif what == 4:
            a = rng.randrange(len(records))
            b = min(len(records), a + rng.randint(1, 16))
            pos = rng.randint(0, len(records))
            records[pos:pos] = records[a:b] * rng.randint(1, 4)
        elif what == 5 and corpus:
            other = rng.choice(corpus)
            if other.records:
                a = rng.randrange(len(other.records))
                b = min(len(other.records), a + rng.randint(1, 64))
                pos = rng.randint(0, len(records))
                records[pos:pos] = other.records[a:b]
        elif what == 6:
            header[rng.randrange(HEADER_BYTES)] = rng.randrange(256)
        elif what == 7:
            i = rng.randrange(len(records))
            r = bytearray(records[i])
            j = rng.randrange(1, RECORD_BYTES)
            r[j:j + 8] = rng.choice([b"\xff" * 8, b"\0" * 8,
                                     rng.randbytes(8)])[:RECORD_BYTES - j]
            records[i] = bytes(r)
        else:
            i = rng.randrange(len(records))
            j = rng.randrange(len(records))
            records[i], records[j] = records[j], records[i]
    return Input(bytes(header), records[:max_records])


def seeded(seed, records):
    return generate(random.Random(seed), records)
