"""The breadth-first search on Spark: the explicit engine's kernel, partitioned by
fingerprint across executors, with every level kept as Parquet in a run directory."""
