"""The results channel: what the guest init sends on the virtio-serial port
org.blklab.results (format documented in guest-images/init)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ChannelData:
    hello: str | None = None  # guest kernel release, once init runs
    files: dict[str, bytes] = field(default_factory=dict)
    status: str | None = None  # "ok", "fail", or None when the guest never finished
    reason: str = ""
    truncated: bool = False  # the stream ended inside a file


def parse(blob: bytes) -> ChannelData:
    data = ChannelData()
    pos = 0
    while pos < len(blob):
        end = blob.find(b"\n", pos)
        if end < 0:
            data.truncated = True
            break
        line = blob[pos:end].decode("utf-8", "replace")
        pos = end + 1
        if line.startswith("BLKLAB-HELLO "):
            data.hello = line.split(" ", 1)[1]
        elif line.startswith("BLKLAB-FILE "):
            parts = line.split(" ")
            if len(parts) != 3 or not parts[2].isdigit():
                data.truncated = True
                break
            size = int(parts[2])
            if pos + size > len(blob):
                data.truncated = True
                break
            data.files[parts[1]] = blob[pos:pos + size]
            pos += size
        elif line.startswith("BLKLAB-END "):
            rest = line.split(" ", 2)
            data.status = rest[1]
            data.reason = rest[2] if len(rest) > 2 else ""
            break
    return data
