"""The live cluster: copied to files for offline work (`snapshot`), and its GPU-sharing ledger checked
(`doctor`); read-only both."""
