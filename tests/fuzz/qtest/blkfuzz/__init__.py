"""blklab's qtest device fuzzer: inputs, the qtest client, the device families
and the run/fuzz/minimise loops (see ../README.md)."""
