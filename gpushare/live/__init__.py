"""The live cluster: copied to files for offline work (`snapshot`), its GPU-sharing ledger checked (`doctor`), and
kept current as Prometheus metrics (`serve.watch`: `state`, `watcher`, `metrics`, `serve`); read-only all."""
