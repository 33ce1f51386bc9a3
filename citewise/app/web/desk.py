"""What the page's tabs and editors need of the page: who asks, what they may read, audit, a turn.

The page (`ChatPage`) gives these. The Library (`web.library`) and the outline editor (`web.outline`) are
built by the page and call back into it; typing them against this protocol, not the page's class, keeps the
page the one module that knows them all (no import circle through their annotations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import gradio as gr

if TYPE_CHECKING:
    from citewise.app.access import Gate
    from citewise.context import Context


class Page(Protocol):
    """The page as its tabs and editors use it (see `citewise.app.web.page.ChatPage`)."""

    TURN_OUTPUTS: int
    """How many outputs a turn yields."""
    context: Context
    """The page's settings: the index or store it answers from."""
    gate: Gate
    """Who may use the page, and the users' store (grants, the audit log)."""

    async def user_of(self, request: gr.Request | None) -> str | None:
        """Who a request is (None: nobody who may use the page)."""
        ...

    def readable_by(self, user: str) -> tuple[str, ...] | None:
        """The collections a user may read (None: every one)."""
        ...

    def audit(self, action: str, user: str, detail: dict[str, Any]) -> None:
        """Append to the audit log."""
        ...

    def turn(
        self,
        question: str,
        mode: str,
        history: list[dict[str, Any]] | None,
        session: dict[str, Any] | None,
        request: gr.Request | None = None,
        command: Any = None,
    ) -> Any:
        """One turn of the graph, streamed (`command` resumes a waiting outline)."""
        ...
