"""The chat web page: `build_page` makes the Gradio Blocks, `serve` runs it (`citewise serve`)."""

from citewise.app.web.page import build_page, serve

__all__ = ["build_page", "serve"]
