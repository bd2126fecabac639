"""Kubernetes documents in: files, standard input and a live cluster, read leniently into plain data."""
