"""citewise: trustworthy, cited answers and reports from your own documents."""

__version__ = "0.1.0"
