"""Gradient compression on the worker side (docs/compression.md).

``structured``: N:4 selection (2:4, 1:4: the patent of seed 000), packed by the agent into MASKED packets
that the switches sum. ``schedule``: which granularity each allreduce uses as training goes on.
``feedback``: residuals (error feedback), so nothing a worker does not send is lost. ``dlgs``: DLGS
(seed 004): layer-wise top-k with threshold reuse, and ``merge``: its layer-merging search.
"""
