"""Reading a report page back the way a browser's DOM holds it: elements, attributes, text."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

# Attributes through which an element makes the browser fetch something.
RESOURCE_ATTRS = {"src", "href", "srcset", "action", "formaction", "poster", "data", "xlink:href", "background", "manifest", "ping"}
_URL_IN_CSS = re.compile(r"url\(\s*['\"]?\s*(https?:)?//", re.IGNORECASE)
_IMPORT = re.compile(r"@import", re.IGNORECASE)


class Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, Any]]] = []
        self.texts: list[str] = []
        self.styles: list[str] = []
        self._in: list[str] = []
        self.raw = text
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "style":
            self.styles.append(data)
        else:
            self.texts.append(data)

    def with_attr(self, name: str) -> list[dict[str, Any]]:
        return [a for _, a in self.elements if name in a]

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.elements if a.get("id")}

    def tags(self, tag: str) -> list[dict[str, Any]]:
        return [a for t, a in self.elements if t == tag]

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def network_references(self) -> list[str]:
        """Every resource reference to another address: an attribute or a CSS url() / @import."""
        found = []
        for tag, attrs in self.elements:
            for name, value in attrs.items():
                if name in RESOURCE_ATTRS and value and re.match(r"\s*(https?:)?//", value, re.IGNORECASE):
                    found.append(f"<{tag} {name}={value}>")
                if name == "style" and value and _URL_IN_CSS.search(value):
                    found.append(f"<{tag} style={value}>")
        for css in self.styles:
            if _URL_IN_CSS.search(css) or _IMPORT.search(css):
                found.append("a stylesheet fetches a URL")
        return found
