"""What every platform's webhook does before it trusts a byte: read the raw body within a size and a time."""

from __future__ import annotations

import asyncio

from aiohttp import web


async def read_body(request: web.Request, *, limit: int, timeout: float) -> bytes:
    """The raw body, at most `limit` bytes, read within `timeout` seconds; else an HTTP error, and a body
    too slow closes the connection. Compressed bodies are refused before a byte is read: Slack and GitHub
    never send them, and inflating one costs CPU out of all proportion to its size."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise web.HTTPUnsupportedMediaType(text="compressed bodies are not accepted")
    if request.content_length is not None and request.content_length > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            while chunk := await request.content.readany():
                size += len(chunk)
                if size > limit:
                    raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=size)
                chunks.append(chunk)
    except TimeoutError:
        if request.transport is not None:
            request.transport.close()  # a dribbling client holds nothing more of ours
        raise web.HTTPRequestTimeout(text="the body came too slowly") from None
    return b"".join(chunks)
