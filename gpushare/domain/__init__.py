"""Facts of the product: resource and label names, profiles, Kubernetes versions, quantities. No I/O."""
