"""Settings in, the installer stack out: components, scheduler configuration, chart or manifests."""
