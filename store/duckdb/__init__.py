"""The local engine: DuckDB in this process over the committed Parquet files of a local store.

`tables.LocalTables` opens the tables of one committed manifest version as DuckDB relations;
`semantics` answers the Ibis predicates on the driver. Nothing here starts a JVM.
"""
