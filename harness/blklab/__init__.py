"""blklab: a lab for the Linux block layer.

The harness turns scenario files into VM runs (one fresh VM per cell),
collects each cell's results over the guest's results channel and prints
and stores them. See README.md and scenarios/README.md.
"""

__version__ = "0.1.0"
