"""softswitch's v1model runtime: packet bits, tables, externs, packet replication, the pipeline."""
