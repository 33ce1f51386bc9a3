"""The chat web page: `build_page` makes the Gradio Blocks, `serve` runs it (`citewise serve`)."""

from citewise.app.web.gradio_import import import_gradio

import_gradio()  # first, so the page's `import gradio` finds it loaded without its stub rewriting (1.1 s)

from citewise.app.web.page import build_page, serve  # noqa: E402

__all__ = ["build_page", "serve"]
