"""The scale simulator: packet-level, event core and links in C, switches running the real P4 program
on softswitch's native back end, agents modelled in C from templates the wire codec builds
(docs/simulator.md)."""
