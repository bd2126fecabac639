"""gpushare: GPU sharing on Kubernetes: installer generator, policy rules and dry-run placement."""

__version__ = "0.1.0"
