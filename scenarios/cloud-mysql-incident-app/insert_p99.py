#!/usr/bin/python3
"""The p99 insert latency one short-form cell can report, from the cloud
model alone (../cloud-mysql-incident-app.md, "p99 latency").

devmodel/profiles/aws-gp3-100g.toml and devmodel/src/cloud.cc: every request
takes latency_floor (400 us) plus Exp(latency_jitter_mean = 200 us); a read
or write first takes an IOPS token, tokens 1/3000 s apart; a flush takes none.
The request sequence of one insert (the page derives it from the kernel):
  - most inserts: the redo write, then the empty preflush: two in a row;
  - an insert whose redo enters a new 4 KiB block (a fraction f of them):
    NVMe: the redo as two writes issued together (the second waits for the
          next token, 333 us), then jbd2's journal write, the commit
          record's preflush, the commit record with FUA: 1 + 3 in a row;
    virtio-blk: one redo write, jbd2's write, the preflush, the commit
          record, the post-flush: five in a row.
The guest's own time is left out. A short-form run has about 1,400 inserts,
so its p99 is itself a random figure; this prints the 0.5% and 99.5%
quantiles of that figure over 2,000 simulated runs, for f = 1/10 and 1/8.

  /usr/bin/python3 scenarios/cloud-mysql-incident-app/insert_p99.py
"""

import random

FLOOR_MS, JITTER_MS, TOKEN_MS = 0.4, 0.2, 1 / 3
INSERTS_PER_RUN, RUNS = 1400, 2000


def request(rng: random.Random) -> float:
    return FLOOR_MS + rng.expovariate(1 / JITTER_MS)


def insert_ms(rng: random.Random, device: str, f: float) -> float:
    if rng.random() >= f:
        return request(rng) + request(rng)
    if device == "nvme":
        redo = max(request(rng), TOKEN_MS + request(rng))
        return redo + sum(request(rng) for _ in range(3))
    return sum(request(rng) for _ in range(5))


def p99(samples: list[float]) -> float:
    s = sorted(samples)
    return s[int(0.99 * len(s))]


def main() -> None:
    rng = random.Random(40)
    for device in ("nvme", "virtio-blk"):
        for f in (1 / 10, 1 / 8):
            runs = sorted(p99([insert_ms(rng, device, f) for _ in range(INSERTS_PER_RUN)])
                          for _ in range(RUNS))
            lo, mid, hi = (runs[int(q * (RUNS - 1))] for q in (0.005, 0.5, 0.995))
            print(f"{device:10s} f=1/{round(1 / f)}: p99 of one run {lo:.2f} / {mid:.2f} / {hi:.2f} ms"
                  " (0.5% / median / 99.5%)")


if __name__ == "__main__":
    main()
