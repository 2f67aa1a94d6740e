"""NDArray and DLPack interchange (placeholder until the runtime lands)."""
